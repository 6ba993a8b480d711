/**
 * The language server's life: find Python, start `python -m trainmedic lsp` with the bundled
 * libraries on PYTHONPATH, restart it (serialised and coalesced), and send it commands.
 */
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import {
    ExecuteCommandRequest,
    LanguageClient,
    LanguageClientOptions,
    ResponseError,
    RevealOutputChannelOn,
    ServerOptions,
    State,
} from 'vscode-languageclient/node';
import { Interpreter, describeAttempts, pathNames, resolveInterpreter, settingProblem } from './interpreter';
import { probePython, pythonExtensionInterpreter, selectInterpreter } from './python';
import { ENTRY_SCHEME } from '../catalogue';
import { CoalescingRunner } from './serial';
import { PathContext, SECTION, ServerSettings, Settings, interpreterCommand, readSettings, serverLaunch, toServerSettings } from './settings';

const CLIENT_ID = 'trainmedic';
const CLIENT_NAME = 'TrainMedic';

export type ServerState = 'starting' | 'running' | 'stopped' | 'noPython' | 'failed';

class ServerNotRunningError extends Error {
    constructor() {
        super('the TrainMedic server is not running (see the TrainMedic output)');
        this.name = 'ServerNotRunningError';
    }
}

export function currentSettings(log: vscode.LogOutputChannel): Settings {
    const config = vscode.workspace.getConfiguration(SECTION);
    return readSettings(
        (key) => config.get(key),
        (problem) => {
            log.warn(problem);
        },
    );
}

/** The server's entry links (`…/rules/<id>`) as the extension's own catalogue documents. */
const ENTRY_LINK = /\/rules\/([a-z0-9][a-z0-9-]*)$/;

function withLocalEntryLink(diagnostic: vscode.Diagnostic): vscode.Diagnostic {
    const code = diagnostic.code;
    const id = typeof code === 'object' && code.target.scheme === 'https' ? ENTRY_LINK.exec(code.target.path)?.[1] : undefined;
    if (id && typeof code === 'object') {
        diagnostic.code = { value: code.value, target: vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/${id}.md` }) };
    }
    return diagnostic;
}

/** A hover's links to catalogue entries as the Show Entry command, the only command it may run. */
function withLocalEntryLinks(hover: vscode.Hover | null | undefined): vscode.Hover | null | undefined {
    if (!hover) {
        return hover;
    }
    const contents = hover.contents.map((part) => {
        const text = typeof part === 'string' ? part : 'value' in part && !('language' in part) ? part.value : undefined;
        if (text === undefined || !/\]\(https:\/\/[^)\s]*\/rules\/[a-z0-9-]+\)/.test(text)) {
            return part;
        }
        const local = new vscode.MarkdownString(
            text.replace(/\]\(https:\/\/[^)\s]*\/rules\/([a-z0-9][a-z0-9-]*)\)/g, (_, id: string) =>
                `](command:trainmedic.showEntry?${encodeURIComponent(JSON.stringify([id]))} "Open the catalogue entry")`,
            ),
        );
        local.isTrusted = { enabledCommands: ['trainmedic.showEntry'] };
        return local;
    });
    return new vscode.Hover(contents, hover.range);
}

function pathContext(): PathContext {
    return { workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, userHome: os.homedir() };
}

function documentSelector(settings: Settings): LanguageClientOptions['documentSelector'] {
    return [
        ...settings.logGlobs.map((pattern) => ({ scheme: 'file', pattern })),
        // Script checks also read DeepSpeed JSON, Accelerate YAML and launch scripts.
        ...(settings.scriptChecks
            ? ['python', 'json', 'yaml', 'shellscript'].map((language) => ({ scheme: 'file', language }))
            : []),
        // Python cells of Jupyter notebooks, which the server syncs as notebooks (hover, quick fixes).
        ...(settings.scriptChecks ? [{ notebook: 'jupyter-notebook', language: 'python' }] : []),
    ];
}

export class ServerManager implements vscode.Disposable {
    private client: LanguageClient | undefined;
    private clientState: { dispose(): void } | undefined;
    private readonly runner = new CoalescingRunner(() => this.restartNow());
    private readonly stateEmitter = new vscode.EventEmitter<ServerState>();
    private current: ServerState = 'stopped';
    private interpreterInUse: Interpreter | undefined;

    readonly onDidChangeState = this.stateEmitter.event;

    constructor(
        private readonly context: vscode.ExtensionContext,
        private readonly log: vscode.LogOutputChannel,
    ) {}

    get state(): ServerState {
        return this.current;
    }

    /** The Python the server runs on, which also runs `trainmedic` verification commands. */
    get interpreter(): Interpreter | undefined {
        return this.interpreterInUse;
    }

    get bundledLibs(): string {
        return this.context.asAbsolutePath(path.join('bundled', 'libs'));
    }

    /** Restarts the server; calls while a restart is running coalesce into one more restart. */
    restart(): Promise<void> {
        return this.runner.run();
    }

    /** The server's answer to a `workspace/executeCommand`, once it is running. */
    async execute(command: string, args: unknown[]): Promise<unknown> {
        await this.runner.idle();
        const client = this.client;
        if (!client || this.current !== 'running') {
            throw new ServerNotRunningError();
        }
        return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
    }

    /** Drops the server's diagnostics of a document it was never told about (an untitled one, closed). */
    forgetDiagnostics(uri: vscode.Uri): void {
        this.client?.diagnostics?.delete(uri);
    }

    async dispose(): Promise<void> {
        await this.stop();
        this.stateEmitter.dispose();
    }

    private setState(state: ServerState): void {
        this.current = state;
        this.stateEmitter.fire(state);
    }

    private async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        this.clientState?.dispose();
        this.clientState = undefined;
        if (client) {
            this.log.info('Server: stopping');
            try {
                await client.stop();
            } catch (error) {
                this.log.warn(`Server: stop failed: ${String(error)}`);
            }
            await client.dispose();
        }
        this.setState('stopped');
    }

    private async restartNow(): Promise<void> {
        await this.stop();
        this.setState('starting');
        const settings = currentSettings(this.log);
        const trusted = vscode.workspace.isTrusted;
        const context = pathContext();
        this.log.info(`Server: starting (workspace ${trusted ? 'trusted' : 'not trusted'})`);
        const resolution = await resolveInterpreter(
            {
                setting: interpreterCommand(settings.interpreter, context),
                pythonExtension: () => pythonExtensionInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri, trusted, this.log),
                pathNames: pathNames(process.platform),
            },
            probePython,
            this.log,
        );
        this.interpreterInUse = resolution.interpreter;
        if (!resolution.interpreter) {
            this.setState('noPython');
            const problem = settingProblem(resolution.attempts);
            if (problem) {
                this.log.error(`Server: not started: ${problem}`);
                void this.offerInterpreterChoice(`TrainMedic: ${problem}`);
                return;
            }
            this.log.error(`Server: no usable Python 3.10+ found; tried ${describeAttempts(resolution.attempts)}`);
            void this.offerInterpreterChoice();
            return;
        }
        const serverSettings = toServerSettings(settings, trusted, context);
        const client = this.createClient(resolution.interpreter, settings, serverSettings);
        this.client = client;
        // The client restarts a crashed server by itself a few times; follow it, so commands
        // wait for a server that runs and the status bar says when it gave up.
        this.clientState = client.onDidChangeState(({ newState }) => {
            if (this.client !== client) {
                return;
            }
            if (newState === State.Running) {
                this.setState('running');
            } else if (newState === State.Stopped && this.current === 'running') {
                this.log.error('Server: stopped unexpectedly (see above); run "TrainMedic: Restart Server" once the cause is fixed');
                this.setState('failed');
            }
        });
        try {
            await client.start();
            this.setState('running');
            this.log.info('Server: running');
        } catch (error) {
            this.setState('failed');
            this.log.error(`Server: failed to start: ${String(error)}`);
            void vscode.window
                .showErrorMessage(`TrainMedic: the server did not start: ${String(error)}`, 'Show output')
                .then((choice) => {
                    if (choice) {
                        this.log.show();
                    }
                });
        }
    }

    private createClient(interpreter: Interpreter, settings: Settings, serverSettings: ServerSettings): LanguageClient {
        const { args, pythonPath } = serverLaunch(settings.importStrategy, this.bundledLibs, process.env.PYTHONPATH, path.delimiter);
        const serverOptions: ServerOptions = {
            command: interpreter.executable,
            args,
            options: {
                cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? this.context.extensionPath,
                env: { ...process.env, PYTHONPATH: pythonPath, PYTHONUTF8: '1' },
            },
        };
        this.log.info(`Server: ${interpreter.executable} ${settings.importStrategy === 'useBundled' ? '-m trainmedic lsp' : 'trainmedic lsp from its environment'} (PYTHONPATH=${pythonPath})`);
        const clientOptions: LanguageClientOptions = {
            documentSelector: documentSelector(settings),
            outputChannel: this.log,
            revealOutputChannelOn: RevealOutputChannelOn.Never,
            initializationOptions: serverSettings,
            middleware: {
                // The server links each diagnostic's code to its catalogue entry by a web address
                // no one serves; in VS Code the entry opens from the bundled catalogue instead.
                handleDiagnostics: (uri, diagnostics, next) => {
                    next(uri, diagnostics.map(withLocalEntryLink));
                },
                provideHover: async (document, position, token, next) => withLocalEntryLinks(await next(document, position, token)),
                workspace: {
                    // The server asks for the `trainmedic` section: answer with what it needs,
                    // including Workspace Trust, which is not a user setting.
                    configuration: async (params, token, next) => {
                        const answers: unknown = await next(params, token);
                        if (!Array.isArray(answers)) {
                            return answers as ResponseError;
                        }
                        const values: unknown[] = answers;
                        return params.items.map((item, i): unknown => (item.section === SECTION ? serverSettings : values[i]));
                    },
                },
            },
        };
        return new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
    }

    private async offerInterpreterChoice(
        message = 'TrainMedic needs Python 3.10 or newer to run its local server, and none was found. ' +
            'Select an interpreter, or set trainmedic.interpreter.',
    ): Promise<void> {
        const choice = await vscode.window.showErrorMessage(
            message,
            'Select interpreter',
            'Show output',
        );
        if (choice === 'Select interpreter') {
            await selectInterpreter();
        } else if (choice === 'Show output') {
            this.log.show();
        }
    }
}
