/**
 * TrainMedic for VS Code: starts the local language server and wires the commands, the results
 * panel, the status bar and the terminal watcher. Nothing leaves the machine.
 */
import * as vscode from 'vscode';
import { CatalogueEntries, ENTRY_SCHEME } from './catalogue';
import { Commands } from './commands';
import { onDidChangePythonEnvironment } from './common/python';
import { ServerManager } from './common/server';
import { RESTART_ON_CHANGE } from './common/settings';
import { DiagnosisStatus } from './statusBar';
import { TerminalWatcher } from './terminal';
import { registerLanguageModelTools } from './lmTools';
import { registerNotebookCommands } from './notebooks';
import { registerRuleAuthoring } from './ruleAuthoring';
import { registerTerminalLinks } from './terminalLinks';

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
    // The language client needs a log output channel (it calls .error/.onDidChangeLogLevel on it).
    const log = vscode.window.createOutputChannel('TrainMedic', { log: true });
    const manager = new ServerManager(context, log);
    server = manager;
    const entries = new CatalogueEntries(manager);
    const status = new DiagnosisStatus();
    const terminals = new TerminalWatcher();
    const commands = new Commands(context, manager, entries, status, terminals, log);

    context.subscriptions.push(
        log,
        status,
        terminals,
        commands,
        ...commands.register(),
        ...registerLanguageModelTools(manager, terminals),
        ...registerNotebookCommands(manager, (result, origin) => {
            commands.showDiagnosis(result, origin);
        }),
        registerTerminalLinks(),
        ...registerRuleAuthoring(manager),
        vscode.workspace.registerTextDocumentContentProvider(ENTRY_SCHEME, entries),
        manager.onDidChangeState((state) => {
            status.showServerState(state);
        }),
        vscode.workspace.onDidChangeConfiguration((event) => {
            if (RESTART_ON_CHANGE.some((setting) => event.affectsConfiguration(setting))) {
                log.info('Settings changed: restarting the server');
                void manager.restart();
            }
        }),
        // Trust changes what the server may load and what the client may run.
        vscode.workspace.onDidGrantWorkspaceTrust(() => {
            log.info('Workspace trusted: restarting the server');
            void manager.restart();
        }),
    );
    void manager.restart();
    const pythonChanged = await onDidChangePythonEnvironment(() => {
        log.info('The Python extension changed the active environment: restarting the server');
        void manager.restart();
    });
    if (pythonChanged) {
        context.subscriptions.push(pythonChanged);
    }
}

export async function deactivate(): Promise<void> {
    await server?.dispose();
    server = undefined;
}
