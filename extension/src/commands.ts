/**
 * Every command of the extension: the diagnose commands (editor, terminal, last command, log
 * folder), the catalogue, and the client-side commands the server's code actions refer to.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { CatalogueEntries } from './catalogue';
import { hasModule, pythonExtensionInterpreter } from './common/python';
import { ServerManager, currentSettings } from './common/server';
import { DiagnoseResult, failedFirst, parseDiagnoseResult, rootCause } from './diagnosis';
import { LargeLogs, SYNC_LIMIT_BYTES } from './largeLogs';
import { Locate } from './panel/model';
import { ResultsPanel } from './panel/panel';
import { DiagnosisStatus } from './statusBar';
import { CommandOutput, TerminalWatcher } from './terminal';
import { verificationCommandLine } from './verification';

const VERIFY_TERMINAL = 'TrainMedic: verify';

interface LspRange {
    readonly start: { readonly line: number; readonly character: number };
    readonly end: { readonly line: number; readonly character: number };
}

/** One argument of the server's `trainmedic.diagnose`: text, or files the server reads. */
type DiagnoseRequest =
    | {
          readonly text: string;
          readonly uri?: string;
          readonly range?: LspRange;
          /** Extra rule pack folders for this diagnosis only. */
          readonly rulePacks?: readonly string[];
      }
    | {
          /** Files and folders, read from disk by the CLI's own input code. */
          readonly paths: readonly string[];
          readonly rulePacks?: readonly string[];
      };

interface Shown {
    readonly result: DiagnoseResult;
    readonly origin: string;
    readonly locate: Locate;
}

class UserError extends Error {}

const nowhere: Locate = () => undefined;

/** Evidence of files the server read: the file and its line, as the CLI names them. */
const onDisk: Locate = (ref) => (ref.path.startsWith('<') ? undefined : { uri: vscode.Uri.file(ref.path).toString(), line: ref.line - 1 });

function lspRange(range: vscode.Range): LspRange {
    return {
        start: { line: range.start.line, character: range.start.character },
        end: { line: range.end.line, character: range.end.character },
    };
}

/** A command argument from a code action or a webview: a string, else nothing. */
function stringArgument(value: unknown): string {
    return typeof value === 'string' ? value : '';
}

/** A terminal command as messages quote it; shell integration may not know its line. */
function commandName(output: CommandOutput): string {
    return output.commandLine.trim() ? `“${output.commandLine.trim()}”` : 'the last command';
}

function fileName(uri: vscode.Uri): string {
    return path.basename(uri.path) || uri.toString();
}

export class Commands implements vscode.Disposable {
    private last: Shown | undefined;
    private readonly panel: ResultsPanel;
    private readonly disposables: { dispose(): unknown }[] = [];
    /** Diagnosed documents the server is never told about (untitled ones): theirs to clear. */
    private readonly unsynced = new Set<string>();
    /** The training environment's Python (the Python extension's active one), for probes. */
    private trainingPython: string | undefined;
    /** The diagnosis of each large log opened, while its file is unchanged (reading one takes a while). */
    private readonly largeLogResults = new Map<string, { readonly stamp: string; readonly result: DiagnoseResult }>();

    constructor(
        context: vscode.ExtensionContext,
        private readonly server: ServerManager,
        private readonly entries: CatalogueEntries,
        private readonly status: DiagnosisStatus,
        private readonly terminals: TerminalWatcher,
        private readonly log: vscode.LogOutputChannel,
    ) {
        this.panel = new ResultsPanel(context.extensionUri, {
            verifyCommandLine: (command) => this.verifyCommandLine(command),
            runVerification: (command) => this.runVerification(command),
            copy: (text, what) => this.copy(text, what),
            showEntry: (ruleId) => this.entries.show(ruleId),
        });
        this.disposables.push(
            this.panel,
            terminals.onDidFailCommand((output) => this.offerFailedCommand(output)),
            new LargeLogs(
                (file) => this.diagnoseOpenedLargeLog(file),
                (file) => {
                    this.largeLogResults.delete(file.toString());
                    this.server.forgetDiagnostics(file);
                },
            ),
            server.onDidChangeState(() => {
                this.largeLogResults.clear();
                void this.findTrainingPython();
            }),
            vscode.workspace.onDidCloseTextDocument((document) => {
                const uri = document.uri.toString();
                if (this.unsynced.delete(uri)) {
                    this.server.forgetDiagnostics(document.uri);
                }
            }),
        );
    }

    /** Registers every command; the registrations are the caller's to dispose. */
    register(): vscode.Disposable[] {
        const commands: Record<string, (...args: unknown[]) => Promise<void> | void> = {
            'trainmedic.diagnoseSelection': () => this.diagnoseSelection(),
            'trainmedic.diagnoseTerminalSelection': () => this.diagnoseTerminalSelection(),
            'trainmedic.diagnoseLastCommand': () => this.diagnoseLastCommand(),
            'trainmedic.diagnoseLogFolder': (folder) => this.diagnoseLogFolder(folder instanceof vscode.Uri ? folder : undefined),
            'trainmedic.showCatalogueEntry': () => this.entries.pick(),
            'trainmedic.showLastDiagnosis': () => {
                this.showLastDiagnosis();
            },
            'trainmedic.restartServer': () => this.server.restart(),
            'trainmedic.showOutput': () => {
                this.log.show();
            },
            'trainmedic.runVerification': (command) => this.runVerification(stringArgument(command)),
            'trainmedic.copyFix': (fix) => this.copy(stringArgument(fix), 'The fix'),
            'trainmedic.showEntry': (ruleId) => this.entries.show(stringArgument(ruleId)),
            'trainmedic.diagnoseWithRulePack': (uri) => this.diagnoseWithRulePack(stringArgument(uri) || undefined),
        };
        return Object.entries(commands).map(([id, run]) =>
            vscode.commands.registerCommand(id, async (...args: unknown[]) => {
                try {
                    await run(...args);
                } catch (error) {
                    this.reportError(error);
                }
            }),
        );
    }

    dispose(): void {
        for (const d of this.disposables) {
            d.dispose();
        }
    }

    private reportError(error: unknown): void {
        const message = error instanceof Error ? error.message : String(error);
        if (error instanceof UserError) {
            void vscode.window.showInformationMessage(`TrainMedic: ${message}`);
            return;
        }
        this.log.error(message);
        void vscode.window.showErrorMessage(`TrainMedic: ${message}`, 'Show output').then((choice) => {
            if (choice) {
                this.log.show();
            }
        });
    }

    private async requestDiagnosis(request: DiagnoseRequest, origin: string): Promise<DiagnoseResult> {
        this.log.info(`Diagnosing ${origin} (${'text' in request ? `${request.text.length} characters` : request.paths.join(', ')})`);
        const started = Date.now();
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'TrainMedic: diagnosing' },
            async () => parseDiagnoseResult(await this.server.execute('trainmedic.diagnose', [request])),
        );
        const root = rootCause(result);
        const rank = result.initiatingRank === null ? '' : `, initiating rank ${result.initiatingRank}`;
        this.log.info(`Diagnosed ${origin} in ${((Date.now() - started) / 1000).toFixed(1)} s: ${root ? `${root.ruleId}${rank}` : 'no root cause'}`);
        for (const warning of result.warnings) {
            this.log.warn(warning);
        }
        return result;
    }

    /** Shows a diagnosis made elsewhere (a notebook cell's output) in the panel and the status bar. */
    showDiagnosis(result: DiagnoseResult, origin: string): void {
        this.present({ result, origin, locate: nowhere });
    }

    private present(shown: Shown): void {
        this.last = shown;
        this.status.showDiagnosis(shown.result, shown.origin);
        this.panel.show(shown.result, shown.origin, shown.locate);
    }

    /** A file in the active tab that VS Code does not sync to extensions (over 50 MB). */
    private async activeLargeFile(): Promise<vscode.Uri | undefined> {
        const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
        const uri = input instanceof vscode.TabInputText ? input.uri : undefined;
        if (uri?.scheme !== 'file') {
            return undefined;
        }
        const size = await vscode.workspace.fs.stat(uri).then((s) => s.size, () => 0);
        return size >= SYNC_LIMIT_BYTES ? uri : undefined;
    }

    /** Files and folders read by the server, as `trainmedic diagnose PATH...` reads them. */
    private async diagnosePaths(paths: readonly vscode.Uri[], origin: string): Promise<DiagnoseResult> {
        const result = await this.requestDiagnosis({ paths: paths.map((p) => p.fsPath) }, origin);
        this.present({ result, origin, locate: onDisk });
        return result;
    }

    /** When the file was last changed, as far as its size and time tell. */
    private async stamp(file: vscode.Uri): Promise<string> {
        const stat = await vscode.workspace.fs.stat(file);
        return `${stat.size}:${stat.mtime}`;
    }

    /** A large log: its diagnosis on open when the file has not changed since, else a new one. */
    private async diagnoseLargeLog(file: vscode.Uri): Promise<void> {
        const kept = this.largeLogResults.get(file.toString());
        const stamp = await this.stamp(file);
        if (kept?.stamp === stamp) {
            this.log.info(`${fileName(file)} is unchanged since it was diagnosed on open: showing that diagnosis`);
            this.present({ result: kept.result, origin: fileName(file), locate: onDisk });
            return;
        }
        const result = await this.diagnosePaths([file], fileName(file));
        this.largeLogResults.set(file.toString(), { stamp, result });
    }

    /** A log too big for VS Code to sync, opened in a tab: diagnosed on open like any log. */
    private async diagnoseOpenedLargeLog(file: vscode.Uri): Promise<void> {
        if (!currentSettings(this.log).diagnoseOnOpen || this.server.state !== 'running') {
            return;
        }
        this.log.info(`${fileName(file)} is over VS Code's ${SYNC_LIMIT_BYTES / 1024 / 1024} MB limit for extensions: the server reads it from disk`);
        try {
            // ifLog: only when the file is a log by trainmedic.logGlobs (the server answers null otherwise).
            const stamp = await this.stamp(file);
            const answer = await this.server.execute('trainmedic.diagnose', [{ paths: [file.fsPath], ifLog: true }]);
            if (answer !== null) {
                const result = parseDiagnoseResult(answer);
                this.largeLogResults.set(file.toString(), { stamp, result });
                this.status.showDiagnosis(result, fileName(file));
            }
        } catch (error) {
            this.log.warn(`Could not diagnose ${file.fsPath}: ${String(error)}`);
        }
    }

    private async diagnoseSelection(): Promise<void> {
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
            const large = await this.activeLargeFile();
            if (large) {
                await this.diagnoseLargeLog(large);
                return;
            }
            throw new UserError('open a log or a traceback in an editor first.');
        }
        const document = editor.document;
        const selection = editor.selection;
        const range = selection.isEmpty ? document.validateRange(new vscode.Range(0, 0, document.lineCount, 0)) : selection;
        const text = document.getText(range);
        if (text.trim() === '') {
            throw new UserError('there is nothing to diagnose: the selection is empty.');
        }
        const name = fileName(document.uri);
        const origin = selection.isEmpty ? name : `${name}, lines ${range.start.line + 1}–${range.end.line + 1}`;
        const uri = document.uri.toString();
        const result = await this.requestDiagnosis({ text, uri, range: lspRange(range) }, origin);
        if (document.uri.scheme !== 'file') {
            this.unsynced.add(uri);
        }
        this.present({ result, origin, locate: (ref) => ({ uri, line: range.start.line + ref.line - 1 }) });
    }

    /** The terminal's selection, read through the clipboard (VS Code has no other way), which is then restored. */
    private async terminalSelection(): Promise<string> {
        const saved = await vscode.env.clipboard.readText();
        await vscode.env.clipboard.writeText('');
        try {
            await vscode.commands.executeCommand('workbench.action.terminal.copySelection');
            return await vscode.env.clipboard.readText();
        } finally {
            await vscode.env.clipboard.writeText(saved);
        }
    }

    private async diagnoseTerminalSelection(): Promise<void> {
        const terminal = vscode.window.activeTerminal;
        if (!terminal) {
            throw new UserError('there is no terminal open.');
        }
        const text = await this.terminalSelection();
        if (text.trim() === '') {
            throw new UserError('select the failed output in the terminal first, or run "TrainMedic: Diagnose Last Command Output".');
        }
        const origin = `a selection in terminal “${terminal.name}”`;
        this.present({ result: await this.requestDiagnosis({ text }, origin), origin, locate: nowhere });
    }

    private commandOrigin(output: CommandOutput): string {
        const exit = output.exitCode === undefined ? '' : `, exit code ${output.exitCode}`;
        return `the output of ${commandName(output)}${exit}${output.truncated ? ' (its last 4 MiB)' : ''}`;
    }

    private async diagnoseLastCommand(): Promise<void> {
        const output = this.terminals.lastOutput(vscode.window.activeTerminal);
        if (!output) {
            throw new UserError(
                'no finished command yet. Commands are seen in terminals with shell integration (bash, zsh, fish, PowerShell) once they end.',
            );
        }
        if (output.text.trim() === '') {
            throw new UserError(
                `no output of ${commandName(output)} reached TrainMedic: select it in the terminal and run "TrainMedic: Diagnose Terminal Selection".`,
            );
        }
        const origin = this.commandOrigin(output);
        this.present({ result: await this.requestDiagnosis({ text: output.text }, origin), origin, locate: nowhere });
    }

    /** A failed terminal command whose output matches a root cause: offer the diagnosis, without interrupting. */
    private async offerFailedCommand(output: CommandOutput): Promise<void> {
        this.log.info(`Terminal: ${commandName(output)} exited with ${output.exitCode ?? '?'} after ${output.text.length} characters of output`);
        if (!currentSettings(this.log).notifyOnFailedCommand || output.text.trim() === '' || this.server.state !== 'running') {
            return;
        }
        const origin = this.commandOrigin(output);
        let result: DiagnoseResult;
        try {
            result = parseDiagnoseResult(await this.server.execute('trainmedic.diagnose', [{ text: output.text }]));
        } catch (error) {
            this.log.warn(`Could not diagnose the failed command ${commandName(output)}: ${String(error)}`);
            return;
        }
        const root = rootCause(result);
        if (!root) {
            return;
        }
        const rank = result.initiatingRank === null ? ''
            : failedFirst(result) ? ` (rank ${result.initiatingRank} failed first)` : ` (rank ${result.initiatingRank})`;
        const choice = await vscode.window.showWarningMessage(
            `TrainMedic: ${commandName(output)} failed: ${root.title}${rank}.`,
            'Show diagnosis',
            "Don't show again",
        );
        if (choice === 'Show diagnosis') {
            this.present({ result, origin, locate: nowhere });
        } else if (choice === "Don't show again") {
            await vscode.workspace.getConfiguration('trainmedic').update('notifyOnFailedCommand', false, vscode.ConfigurationTarget.Global);
        }
    }

    /** Diagnoses `given` (the Explorer's folder), or a folder the user picks. */
    private async diagnoseLogFolder(given: vscode.Uri | undefined): Promise<void> {
        const picked = given ? [given] : await vscode.window.showOpenDialog({
            canSelectFiles: false,
            canSelectFolders: true,
            canSelectMany: false,
            defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
            openLabel: 'Diagnose',
            title: 'TrainMedic: a folder of logs (a torchrun --log-dir, per-rank files)',
        });
        const folder = picked?.[0];
        if (!folder) {
            return;
        }
        await this.diagnosePaths([folder], `the logs in ${path.basename(folder.fsPath)}`);
    }

    private showLastDiagnosis(): void {
        if (!this.last) {
            throw new UserError('nothing diagnosed yet: run "TrainMedic: Diagnose Selection" on a log.');
        }
        this.present(this.last);
    }

    private async findTrainingPython(): Promise<void> {
        const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
        this.trainingPython = await pythonExtensionInterpreter(folder, vscode.workspace.isTrusted, this.log);
    }

    /** Probes run where the training runs: the training environment's Python, else the server's. */
    private verificationPython(): string | undefined {
        return this.trainingPython ?? this.server.interpreter?.executable;
    }

    private verifyCommandLine(command: string): string {
        return verificationCommandLine(command, this.verificationPython(), process.platform);
    }

    /** Types the command into the verification terminal: only ever on the user's click, only when trusted. */
    private async runVerification(command: string): Promise<void> {
        if (command.trim() === '') {
            return;
        }
        if (!vscode.workspace.isTrusted) {
            const choice = await vscode.window.showWarningMessage(
                'TrainMedic: verification commands run only in a trusted workspace.',
                'Manage Workspace Trust',
            );
            if (choice) {
                await vscode.commands.executeCommand('workbench.trust.manage');
            }
            return;
        }
        const libs = this.server.bundledLibs;
        const terminal =
            vscode.window.terminals.find((t) => t.name === VERIFY_TERMINAL && t.exitStatus === undefined) ??
            vscode.window.createTerminal({
                name: VERIFY_TERMINAL,
                cwd: vscode.workspace.workspaceFolders?.[0]?.uri,
                env: { PYTHONPATH: [libs, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) },
            });
        terminal.show();
        const python = this.verificationPython();
        if (python && /^trainmedic\s+probe\b/.test(command.trim()) && (await hasModule(python, 'torch')) === false) {
            void vscode.window.showWarningMessage(
                `TrainMedic: ${python} has no torch, so the probe cannot test anything there: select the training environment (Python: Select Interpreter).`,
            );
        }
        const line = this.verifyCommandLine(command);
        this.log.info(`Verification: ${line}`);
        terminal.sendText(line, true);
    }

    private async copy(text: string, what: string): Promise<void> {
        await vscode.env.clipboard.writeText(text);
        void vscode.window.showInformationMessage(`TrainMedic: ${what} is on the clipboard.`);
    }

    /** Diagnoses the document again with one more rule pack, for this diagnosis only. */
    private async diagnoseWithRulePack(uriText: string | undefined): Promise<void> {
        if (!vscode.workspace.isTrusted) {
            throw new UserError('rule packs load only in a trusted workspace.');
        }
        const uri = uriText ? vscode.Uri.parse(uriText) : vscode.window.activeTextEditor?.document.uri;
        if (!uri) {
            throw new UserError('open the log to diagnose first.');
        }
        const picked = await vscode.window.showOpenDialog({
            canSelectFiles: false,
            canSelectFolders: true,
            canSelectMany: false,
            defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
            openLabel: 'Use this rule pack',
            title: 'TrainMedic: a folder of rule files (*.yaml)',
        });
        const pack = picked?.[0];
        if (!pack) {
            return;
        }
        const document = await vscode.workspace.openTextDocument(uri);
        const range = document.validateRange(new vscode.Range(0, 0, document.lineCount, 0));
        const origin = `${fileName(uri)} with rule pack ${path.basename(pack.fsPath)}`;
        const request = { text: document.getText(), uri: uri.toString(), range: lspRange(range), rulePacks: [pack.fsPath] };
        const result = await this.requestDiagnosis(request, origin);
        this.present({ result, origin, locate: (ref) => ({ uri: uri.toString(), line: ref.line - 1 }) });
    }
}
