/**
 * Finding Python on this machine: the Python extension's active environment, and the probe that
 * checks a candidate really is Python 3.10+.
 */
import { execFile } from 'child_process';
import * as vscode from 'vscode';
import { Logger } from './logger';
import { PROBE_ARGS, Probe } from './interpreter';

const PYTHON_EXTENSION = 'ms-python.python';
const PROBE_TIMEOUT_MS = 15_000;

/** The part of the Python extension's `environments` API this extension uses. */
interface PythonEnvironmentsApi {
    getActiveEnvironmentPath(resource?: vscode.Uri): { readonly id: string; readonly path: string };
    resolveEnvironment(environment: { readonly id: string; readonly path: string }): Promise<
        { readonly executable: { readonly uri: vscode.Uri | undefined } } | undefined
    >;
    readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}

function isEnvironmentsApi(value: unknown): value is PythonEnvironmentsApi {
    const api = value as Partial<PythonEnvironmentsApi> | undefined;
    return (
        typeof api?.getActiveEnvironmentPath === 'function' &&
        typeof api.resolveEnvironment === 'function' &&
        typeof api.onDidChangeActiveEnvironmentPath === 'function'
    );
}

async function environmentsApi(): Promise<PythonEnvironmentsApi | undefined> {
    const extension = vscode.extensions.getExtension<{ environments?: unknown } | undefined>(PYTHON_EXTENSION);
    if (!extension) {
        return undefined;
    }
    const exports = extension.isActive ? extension.exports : await extension.activate();
    return isEnvironmentsApi(exports?.environments) ? exports.environments : undefined;
}

function isPythonExtensionInstalled(): boolean {
    return vscode.extensions.getExtension(PYTHON_EXTENSION) !== undefined;
}

/**
 * The Python extension's active interpreter for `resource`. In an untrusted workspace it is not
 * asked: its environment may live inside the workspace, and running it would run workspace code.
 */
export async function pythonExtensionInterpreter(resource: vscode.Uri | undefined, trusted: boolean, log: Logger): Promise<string | undefined> {
    if (!isPythonExtensionInstalled()) {
        log.info('Interpreter: the Python extension is not installed');
        return undefined;
    }
    if (!trusted) {
        log.info('Interpreter: not asking the Python extension in an untrusted workspace');
        return undefined;
    }
    try {
        const api = await environmentsApi();
        const environment = api && (await api.resolveEnvironment(api.getActiveEnvironmentPath(resource)));
        return environment?.executable.uri?.fsPath;
    } catch (error) {
        log.warn(`Interpreter: the Python extension did not answer: ${String(error)}`);
        return undefined;
    }
}

/** Calls `listener` when the user picks another interpreter in the Python extension. */
export async function onDidChangePythonEnvironment(listener: () => void): Promise<vscode.Disposable | undefined> {
    if (!isPythonExtensionInstalled()) {
        return undefined;
    }
    try {
        return (await environmentsApi())?.onDidChangeActiveEnvironmentPath(listener);
    } catch {
        return undefined;
    }
}

export const probePython: Probe = (command) =>
    new Promise((resolve) => {
        execFile(command, [...PROBE_ARGS], { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error, stdout, stderr) => {
            if (!error) {
                resolve({ stdout });
                return;
            }
            const code = (error as NodeJS.ErrnoException).code;
            if (code === 'ENOENT') {
                resolve({ error: 'was not found' });
            } else if (error.killed) {
                resolve({ error: `did not answer within ${PROBE_TIMEOUT_MS / 1000} s` });
            } else {
                const detail = stderr.trim().split(/\r?\n/).pop() ?? error.message;
                resolve({ error: `failed: ${detail}` });
            }
        });
    });

/** Whether `python` can import `module` (undefined when it did not run). */
export function hasModule(python: string, module: string): Promise<boolean | undefined> {
    const check = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(${JSON.stringify(module)}) else 3)`;
    return new Promise((resolve) => {
        const child = execFile(python, ['-c', check], { timeout: PROBE_TIMEOUT_MS, windowsHide: true }, (error) => {
            resolve(!error ? true : child.exitCode === 3 ? false : undefined);
        });
    });
}

/** Lets the user pick Python: through the Python extension when installed, else a file dialog. */
export async function selectInterpreter(): Promise<void> {
    if (isPythonExtensionInstalled()) {
        await vscode.commands.executeCommand('python.setInterpreter');
        return;
    }
    const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        openLabel: 'Use this Python',
        title: 'TrainMedic: select a Python 3.10+ interpreter',
    });
    if (picked?.[0]) {
        await vscode.workspace
            .getConfiguration('trainmedic')
            .update('interpreter', picked[0].fsPath, vscode.ConfigurationTarget.Global);
    }
}
