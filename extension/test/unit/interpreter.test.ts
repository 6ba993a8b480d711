import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '../../src/common/logger';
import { Probe, describeAttempts, isSupported, parseProbeOutput, pathNames, resolveInterpreter, settingProblem } from '../../src/common/interpreter';

function recorder(): Logger & { lines: string[] } {
    const lines: string[] = [];
    return {
        lines,
        info: (m) => lines.push(`info ${m}`),
        warn: (m) => lines.push(`warn ${m}`),
        error: (m) => lines.push(`error ${String(m)}`),
    };
}

/** A probe that knows a few commands: their version, or that they are missing. */
function fakeProbe(known: Record<string, string>): Probe & { asked: string[] } {
    const asked: string[] = [];
    const probe = (command: string): Promise<{ stdout: string } | { error: string }> => {
        asked.push(command);
        const version = known[command];
        return Promise.resolve(version === undefined ? { error: 'was not found' } : { stdout: `${version}\n/usr/bin/${command}\n` });
    };
    return Object.assign(probe, { asked });
}

describe('interpreter resolution order', () => {
    it('uses trainmedic.interpreter first and never asks the Python extension then', async () => {
        const probe = fakeProbe({ '/opt/py/bin/python': '3.12.1', python3: '3.11.7' });
        let askedExtension = false;
        const log = recorder();
        const { interpreter, attempts } = await resolveInterpreter(
            {
                setting: '/opt/py/bin/python',
                pythonExtension: () => {
                    askedExtension = true;
                    return Promise.resolve('/venv/bin/python');
                },
                pathNames: ['python3', 'python'],
            },
            probe,
            log,
        );
        assert.equal(interpreter?.source, 'trainmedic.interpreter');
        assert.equal(interpreter.version, '3.12.1');
        assert.equal(askedExtension, false);
        assert.deepEqual(probe.asked, ['/opt/py/bin/python']);
        assert.equal(attempts.length, 1);
        assert.match(log.lines.join('\n'), /trainmedic.interpreter: \/opt\/py\/bin\/python → Python 3.12.1/);
    });

    it('falls back to the Python extension, then python3, then python, logging each step', async () => {
        const probe = fakeProbe({ python: '3.10.0' });
        const log = recorder();
        const { interpreter, attempts } = await resolveInterpreter(
            { setting: '', pythonExtension: () => Promise.resolve('/venv/bin/python'), pathNames: ['python3', 'python'] },
            probe,
            log,
        );
        assert.deepEqual(probe.asked, ['/venv/bin/python', 'python3', 'python']);
        assert.deepEqual(
            attempts.map((a) => [a.source, a.command, a.rejected]),
            [
                ['Python extension', '/venv/bin/python', 'was not found'],
                ['PATH', 'python3', 'was not found'],
                ['PATH', 'python', undefined],
            ],
        );
        assert.equal(interpreter?.executable, '/usr/bin/python');
        assert.deepEqual(
            log.lines.map((l) => l.split(':')[1]?.trim()),
            ['trainmedic.interpreter', 'Python extension', 'PATH', 'PATH'],
        );
    });

    it('skips an interpreter older than 3.10', async () => {
        const probe = fakeProbe({ python3: '3.8.18', python: '3.11.2' });
        const { interpreter, attempts } = await resolveInterpreter(
            { setting: '', pythonExtension: () => Promise.resolve(undefined), pathNames: ['python3', 'python'] },
            probe,
            recorder(),
        );
        assert.equal(interpreter?.version, '3.11.2');
        assert.match(attempts[0]?.rejected ?? '', /3\.8\.18; 3\.10 or newer/);
    });

    it('reports every attempt when nothing works', async () => {
        const { interpreter, attempts } = await resolveInterpreter(
            { setting: '', pythonExtension: () => Promise.resolve('/venv/bin/python'), pathNames: ['python3', 'python'] },
            fakeProbe({}),
            recorder(),
        );
        assert.equal(interpreter, undefined);
        assert.equal(
            describeAttempts(attempts),
            '/venv/bin/python (Python extension) was not found; python3 (PATH) was not found; python (PATH) was not found',
        );
        assert.equal(settingProblem(attempts), undefined);
    });

    it('stops at a trainmedic.interpreter that does not exist and says so in one line', async () => {
        const probe = fakeProbe({ python3: '3.11.7' });
        const { interpreter, attempts } = await resolveInterpreter(
            { setting: '/opt/nowhere/python', pythonExtension: () => Promise.resolve('/venv/bin/python'), pathNames: ['python3'] },
            probe,
            recorder(),
        );
        assert.equal(interpreter, undefined); // python3 works, but it is not what was asked for
        assert.deepEqual(probe.asked, ['/opt/nowhere/python']);
        assert.equal(settingProblem(attempts), 'trainmedic.interpreter "/opt/nowhere/python" was not found: set it to a Python 3.10+ or clear it.');
    });

    it('rejects a program that does not answer like Python', async () => {
        const probe: Probe = () => Promise.resolve({ stdout: 'hello\n' });
        const { interpreter, attempts } = await resolveInterpreter(
            { setting: '/bin/echo', pythonExtension: () => Promise.resolve(undefined), pathNames: [] },
            probe,
            recorder(),
        );
        assert.equal(interpreter, undefined);
        assert.equal(attempts[0]?.rejected, 'did not answer like a Python interpreter');
    });
});

describe('probe output', () => {
    it('parses the version and the executable', () => {
        assert.deepEqual(parseProbeOutput('3.11.7\r\n/usr/local/bin/python3.11\r\n'), {
            version: [3, 11, 7],
            executable: '/usr/local/bin/python3.11',
        });
        assert.equal(parseProbeOutput('Python 3.11.7'), undefined);
    });

    it('accepts 3.10 and newer only', () => {
        assert.equal(isSupported([3, 9, 18]), false);
        assert.equal(isSupported([3, 10, 0]), true);
        assert.equal(isSupported([3, 13, 1]), true);
        assert.equal(isSupported([4, 0, 0]), true);
        assert.equal(isSupported([2, 7, 18]), false);
    });

    it('names python3 before python, except on Windows', () => {
        assert.deepEqual(pathNames('linux'), ['python3', 'python']);
        assert.deepEqual(pathNames('darwin'), ['python3', 'python']);
        assert.deepEqual(pathNames('win32'), ['python', 'py']);
    });
});
