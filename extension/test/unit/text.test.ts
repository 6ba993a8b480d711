import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isBinary, isLogFileName, joinLogs, selectWithinBudget } from '../../src/logFolder';
import { parseDiagnoseResult } from '../../src/diagnosis';
import { buildPanelModel } from '../../src/panel/model';
import { TailBuffer } from '../../src/tailBuffer';
import { quoteForShell, verificationCommandLine } from '../../src/verification';

describe('terminal output tail', () => {
    it('keeps everything under the limit', () => {
        const tail = new TailBuffer(100);
        tail.push('a\n');
        tail.push('b\n');
        assert.equal(tail.text(), 'a\nb\n');
        assert.equal(tail.truncated, false);
    });

    it('keeps the last whole lines within the limit', () => {
        const tail = new TailBuffer(10);
        for (const chunk of ['line 1\n', 'line 2\n', 'line 3\n']) {
            tail.push(chunk);
        }
        assert.equal(tail.truncated, true);
        assert.equal(tail.text(), 'line 3\n');
    });
});

describe('log folders', () => {
    it('reads the names the CLI reads', () => {
        for (const name of ['rank0.log', 'slurm-1234.out', 'job.err', 'stdout', 'stderr', 'events.json', 'notes.txt']) {
            assert.ok(isLogFileName(name), name);
        }
        for (const name of ['train.py', 'model.pt', 'config.yaml']) {
            assert.ok(!isLogFileName(name), name);
        }
    });

    it('tells binary files by a NUL byte in their first block', () => {
        assert.equal(isBinary(new TextEncoder().encode('[rank0]: ok\n')), false);
        assert.equal(isBinary(Uint8Array.from([0x50, 0x4b, 0x03, 0x04, 0x00])), true);
        const late = new Uint8Array(10_000).fill(0x61);
        late[9000] = 0;
        assert.equal(isBinary(late), false);
    });

    it('takes files in path order up to the budget and names the rest', () => {
        const files = [
            { path: '/l/b.log', size: 60 },
            { path: '/l/a.log', size: 50 },
            { path: '/l/c.log', size: 40 },
        ];
        const { files: kept, skipped } = selectWithinBudget(files, 100);
        assert.deepEqual(
            kept.map((f) => f.path),
            ['/l/a.log', '/l/c.log'],
        );
        assert.deepEqual(
            skipped.map((f) => f.path),
            ['/l/b.log'],
        );
    });

    it('joins files into one text and maps its lines back to each file', () => {
        const joined = joinLogs([
            { uri: 'file:///l/0/stderr.log', text: 'a\nb' },
            { uri: 'file:///l/empty.log', text: '' },
            { uri: 'file:///l/1/stderr.log', text: 'c\nd\ne\n' },
        ]);
        assert.equal(joined.text, 'a\nb\nc\nd\ne\n');
        assert.deepEqual(joined.place(2), { uri: 'file:///l/0/stderr.log', line: 1 });
        assert.deepEqual(joined.place(3), { uri: 'file:///l/1/stderr.log', line: 0 });
        assert.deepEqual(joined.place(5), { uri: 'file:///l/1/stderr.log', line: 2 });
        assert.equal(joined.place(6), undefined);
    });

    it('names per-rank files with their rank folder', () => {
        const joined = joinLogs([
            { uri: 'file:///l/attempt_0/0/stderr.log', text: 'ok\n' },
            { uri: 'file:///l/attempt_0/1/stderr.log', text: 'ok\nboom\n' },
        ]);
        const result = parseDiagnoseResult({
            initiating_rank: 1,
            initiating_reason: 'rank 1 failed first (x, <text>:3)',
            diagnoses: [
                { rule_id: 'x', title: 'X', role: 'root', confidence: 1, rank: 1, evidence: [{ path: '<text>', line: 3, text: 'boom' }], fix: '', verify: '' },
            ],
            ranks: {},
        });
        const model = buildPanelModel(result, 'folder', (ref) => joined.place(ref.line));
        assert.equal(model.evidence[0]?.link.label, '1/stderr.log:2');
        assert.equal(model.why, 'Rank 1 failed first (x, 1/stderr.log:2).');
    });
});

describe('verification command line', () => {
    it('runs trainmedic through the server’s Python', () => {
        assert.equal(verificationCommandLine('trainmedic probe amp', '/usr/bin/python3', 'linux'), '/usr/bin/python3 -m trainmedic probe amp');
        assert.equal(
            verificationCommandLine('trainmedic probe amp', '/home/me/my envs/bin/python', 'linux'),
            "'/home/me/my envs/bin/python' -m trainmedic probe amp",
        );
        assert.equal(
            verificationCommandLine('trainmedic probe amp', 'C:\\Program Files\\Python312\\python.exe', 'win32'),
            '& "C:\\Program Files\\Python312\\python.exe" -m trainmedic probe amp',
        );
    });

    it('leaves any other command as the rule wrote it', () => {
        assert.equal(verificationCommandLine('nvidia-smi topo -m', '/usr/bin/python3', 'linux'), 'nvidia-smi topo -m');
        assert.equal(verificationCommandLine('trainmedicx --help', '/usr/bin/python3', 'linux'), 'trainmedicx --help');
        assert.equal(verificationCommandLine('trainmedic probe amp', undefined, 'linux'), 'trainmedic probe amp');
    });

    it('quotes for POSIX shells only when needed', () => {
        assert.equal(quoteForShell('/usr/bin/python3', 'linux'), '/usr/bin/python3');
        assert.equal(quoteForShell("it's", 'linux'), "'it'\\''s'");
    });
});
