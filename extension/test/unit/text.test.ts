import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
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
