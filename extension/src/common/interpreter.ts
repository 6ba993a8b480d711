/**
 * Which Python runs the server, in a fixed, logged order:
 *   1. the `trainmedic.interpreter` setting,
 *   2. the Python extension's active environment (when that extension is installed),
 *   3. `python3`, then `python`, on PATH.
 * The first candidate that runs and is Python 3.10 or newer wins, except that a setting which
 * does not work stops the search: the user asked for that interpreter, and quietly running
 * another would hide the mistake. Pure: the caller passes the probe (which runs the candidate)
 * and the Python extension lookup.
 */
import { Logger } from './logger';

export const MIN_PYTHON: readonly [number, number] = [3, 10];

/** Prints the version and the real executable, so a PATH name resolves to a full path. */
export const PROBE_ARGS: readonly string[] = [
    '-c',
    'import sys; print("%d.%d.%d" % sys.version_info[:3]); print(sys.executable)',
];

export type InterpreterSource = 'trainmedic.interpreter' | 'Python extension' | 'PATH';

export interface Interpreter {
    readonly executable: string;
    readonly version: string;
    readonly source: InterpreterSource;
}

export interface Attempt {
    readonly source: InterpreterSource;
    readonly command: string;
    /** Why this candidate was not used; undefined for the one chosen. */
    readonly rejected: string | undefined;
}

export interface Resolution {
    readonly interpreter: Interpreter | undefined;
    readonly attempts: readonly Attempt[];
}

/** Runs `command PROBE_ARGS`: its stdout, or the error that stopped it. */
export type Probe = (command: string) => Promise<{ stdout: string } | { error: string }>;

export interface Sources {
    readonly setting: string;
    /** The Python extension's active interpreter; undefined when it is not installed or has none. */
    readonly pythonExtension: () => Promise<string | undefined>;
    readonly pathNames: readonly string[];
}

export function pathNames(platform: NodeJS.Platform): string[] {
    return platform === 'win32' ? ['python', 'py'] : ['python3', 'python'];
}

export function parseProbeOutput(stdout: string): { version: [number, number, number]; executable: string } | undefined {
    const [versionLine, executableLine] = stdout.trim().split(/\r?\n/);
    const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(versionLine?.trim() ?? '');
    if (!match) {
        return undefined;
    }
    return {
        version: [Number(match[1]), Number(match[2]), Number(match[3])],
        executable: executableLine?.trim() ?? '',
    };
}

export function isSupported(version: readonly [number, number, number]): boolean {
    const [major, minor] = version;
    return major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]);
}

async function tryCandidate(
    source: InterpreterSource,
    command: string,
    probe: Probe,
): Promise<{ interpreter?: Interpreter; attempt: Attempt }> {
    const outcome = await probe(command);
    if ('error' in outcome) {
        return { attempt: { source, command, rejected: outcome.error } };
    }
    const parsed = parseProbeOutput(outcome.stdout);
    if (!parsed) {
        return { attempt: { source, command, rejected: 'did not answer like a Python interpreter' } };
    }
    const version = parsed.version.join('.');
    if (!isSupported(parsed.version)) {
        return { attempt: { source, command, rejected: `is Python ${version}; ${MIN_PYTHON.join('.')} or newer is needed` } };
    }
    return {
        interpreter: { executable: parsed.executable || command, version, source },
        attempt: { source, command, rejected: undefined },
    };
}

export async function resolveInterpreter(sources: Sources, probe: Probe, log: Logger): Promise<Resolution> {
    const attempts: Attempt[] = [];
    const candidates: (() => Promise<[InterpreterSource, string | undefined]>)[] = [
        () => Promise.resolve(['trainmedic.interpreter', sources.setting || undefined]),
        async () => ['Python extension', await sources.pythonExtension()],
        ...sources.pathNames.map((name) => () => Promise.resolve<[InterpreterSource, string]>(['PATH', name])),
    ];
    for (const next of candidates) {
        const [source, command] = await next();
        if (command === undefined) {
            log.info(`Interpreter: ${source}: nothing set`);
            continue;
        }
        const { interpreter, attempt } = await tryCandidate(source, command, probe);
        attempts.push(attempt);
        if (interpreter) {
            log.info(`Interpreter: ${source}: ${command} → Python ${interpreter.version} at ${interpreter.executable} (using it)`);
            return { interpreter, attempts };
        }
        log.warn(`Interpreter: ${source}: ${command} ${attempt.rejected ?? ''}`);
        if (source === 'trainmedic.interpreter') {
            return { interpreter: undefined, attempts };
        }
    }
    return { interpreter: undefined, attempts };
}

/** The one line for a `trainmedic.interpreter` that does not work, else undefined. */
export function settingProblem(attempts: readonly Attempt[]): string | undefined {
    const setting = attempts.find((a) => a.source === 'trainmedic.interpreter' && a.rejected !== undefined);
    return setting && `trainmedic.interpreter "${setting.command}" ${setting.rejected ?? ''}: set it to a Python 3.10+ or clear it.`;
}

/** One line per candidate tried, for the notification when none worked. */
export function describeAttempts(attempts: readonly Attempt[]): string {
    return attempts.map((a) => `${a.command} (${a.source}) ${a.rejected ?? 'worked'}`).join('; ');
}
