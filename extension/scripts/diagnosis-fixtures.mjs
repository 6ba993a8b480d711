// The unit tests' diagnosis fixtures (test/fixtures/diagnosis/*.json) are the server's own
// answers: `trainmedic diagnose --format json` on real logs, run from the repository's server.
// `node scripts/diagnosis-fixtures.mjs` writes them; `--check` (part of `npm test`) fails, with
// the file to regenerate, when one differs from what the server answers today.
// Needs a Python 3.10+ (PYTHON, default python3); the CLI runs from ../server without installing.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
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
const python = process.env.PYTHON || 'python3';
let stale = 0;
for (const { name, cwd, path } of FIXTURES) {
    const answer = execFileSync(python, ['-m', 'trainmedic', 'diagnose', '--format', 'json', path], {
        cwd,
        env: { ...process.env, PYTHONPATH: join(REPO, 'server') },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
    });
    const file = join(OUT, name);
    if (!check) {
        writeFileSync(file, answer);
        continue;
    }
    let kept = '';
    try {
        kept = readFileSync(file, 'utf8');
    } catch {
        // missing: stale
    }
    if (kept !== answer) {
        stale += 1;
        console.error(`${file} is not what the server answers today: run node scripts/diagnosis-fixtures.mjs`);
    }
}
process.exit(stale === 0 ? 0 : 1);
