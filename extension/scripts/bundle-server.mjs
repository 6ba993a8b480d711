// Puts the language server and its pure-Python libraries into bundled/libs, which the extension
// puts on PYTHONPATH: the trainmedic package from ../server, and the pinned libraries of
// bundled-requirements.txt installed with `pip install -t bundled/libs --no-deps`. Then proves
// that a bare Python (no site-packages) imports the server from there.
// PYTHON names the interpreter that runs pip (default python3).
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libs = join(root, 'bundled', 'libs');
const python = process.env.PYTHON ?? 'python3';
const run = (args) => execFileSync(python, args, { stdio: 'inherit', cwd: root });

rmSync(join(root, 'bundled'), { recursive: true, force: true });
run(['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--root-user-action=ignore', '--no-compile', '--no-deps',
    '--only-binary', ':all:', '--target', libs, '-r', join(root, 'bundled-requirements.txt')]);

// PyYAML's wheel carries an optional C accelerator for one platform; its pure loader is what
// runs everywhere (yaml/__init__.py falls back to it when yaml._yaml is missing).
const removeCompiled = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) {
            if (entry.name === '__pycache__') {
                rmSync(path, { recursive: true, force: true });
            } else {
                removeCompiled(path);
            }
        } else if (/\.(so|pyd|dylib)$/.test(entry.name)) {
            rmSync(path);
        }
    }
};
rmSync(join(libs, '_yaml'), { recursive: true, force: true });
rmSync(join(libs, 'bin'), { recursive: true, force: true });

const server = resolve(root, '..', 'server', 'trainmedic');
if (!existsSync(join(server, '__init__.py'))) {
    throw new Error(`the trainmedic package is not at ${server}`);
}
cpSync(server, join(libs, 'trainmedic'), {
    recursive: true,
    filter: (source) => !/(__pycache__|\.pyc$|\.mypy_cache|\.pytest_cache)/.test(source),
});
removeCompiled(libs);

// -S: no site-packages, so only the standard library and bundled/libs are importable.
run(['-S', '-c', [
    'import sys',
    `sys.path.insert(0, ${JSON.stringify(libs)})`,
    'import yaml, fastjsonschema, pygls.lsp.server, trainmedic.lsp.server',
    'assert not yaml.__with_libyaml__',
    'print("bundled/libs: the server imports with Python %d.%d and no site-packages" % sys.version_info[:2])',
].join('\n')]);
