// The unit tests' diagnosis fixtures (test/fixtures/diagnosis/*.json) are the server's own
// answers: `trainmedic diagnose --format json` on real logs, run from the repository's server.
// `node scripts/diagnosis-fixtures.mjs` writes them; `--check` (part of `npm test`) fails, with
// the file to regenerate, when one differs from what the server answers today.
// Needs a Python 3.10+ with the server's libraries: PYTHON, else the repository's .venv (which
// `make` builds), else python3; the CLI runs from ../server without installing.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const EXT = join(dirname(fileURLToPath(import.meta.url)), '..');
const REPO = join(EXT, '..');
const OUT = join(EXT, 'test', 'fixtures', 'diagnosis');

// Each fixture: the folder the CLI runs in and the path it is given, so the paths in the
// answer are short and the same on every machine.
const FIXTURES = [
    { name: 'torchrun-amp.json', cwd: join(EXT, 'test', 'fixtures', 'workspace'), path: 'torchrun-amp.log' },
    { name: 'per-rank-files.json', cwd: join(REPO, 'tests', 'fixtures'), path: 'per-rank-files' },
    { name: 'torchrun-hang.json', cwd: join(REPO, 'tests', 'fixtures', 'launchers'), path: 'torchrun-hang.log' },
];

const check = process.argv.includes('--check');
const venv = join(REPO, '.venv', process.platform === 'win32' ? 'Scripts/python.exe' : 'bin/python');
const python = process.env.PYTHON || (existsSync(venv) ? venv : 'python3');
let stale = 0;
for (const { name, cwd, path } of FIXTURES) {
    let answer;
    try {
        answer = execFileSync(python, ['-m', 'trainmedic', 'diagnose', '--format', 'json', path], {
            cwd,
            env: { ...process.env, PYTHONPATH: join(REPO, 'server') },
            encoding: 'utf8',
            maxBuffer: 64 * 1024 * 1024,
            stdio: ['ignore', 'pipe', 'pipe'],
        });
    } catch (error) {
        const why = String(error.stderr || error.message).trim().split('\n').pop();
        console.error(`${python} -m trainmedic diagnose ${path} failed (${why}): set PYTHON to a Python with the server's libraries (make .venv/.installed)`);
        process.exit(2);
    }
    // Piped, the CLI prints its JSON on one line: kept indented, and compared as values.
    const parsed = JSON.parse(answer);
    const file = join(OUT, name);
    if (!check) {
        writeFileSync(file, `${JSON.stringify(parsed, null, 2)}\n`);
        continue;
    }
    let kept = '';
    try {
        kept = JSON.stringify(JSON.parse(readFileSync(file, 'utf8')));
    } catch {
        // missing or not JSON: stale
    }
    if (kept !== JSON.stringify(parsed)) {
        stale += 1;
        console.error(`${file} is not what the server answers today: run node scripts/diagnosis-fixtures.mjs`);
    }
}
process.exit(stale === 0 ? 0 : 1);
