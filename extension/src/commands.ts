/**
 * Every command of the extension: the diagnose commands (editor, terminal, last command, log
 * folder), the catalogue, and the client-side commands the server's code actions refer to.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { CatalogueEntries } from './catalogue';
import { ServerManager, currentSettings } from './common/server';
import { DiagnoseResult, failedFirst, parseDiagnoseResult, rootCause } from './diagnosis';
import { FolderFile, LogText, isBinary, isLogFileName, joinLogs, selectWithinBudget } from './logFolder';
import { Locate } from './panel/model';
import { ResultsPanel } from './panel/panel';
import { DiagnosisStatus } from './statusBar';
import { CommandOutput, TerminalWatcher } from './terminal';
import { verificationCommandLine } from './verification';

/** The most a log folder may send to the server at once. */
const FOLDER_BUDGET_BYTES = 64 * 1024 * 1024;
const FOLDER_MAX_FILES = 4096;
const VERIFY_TERMINAL = 'TrainMedic: verify';

interface LspRange {
    readonly start: { readonly line: number; readonly character: number };
    readonly end: { readonly line: number; readonly character: number };
}

/** One argument of the server's `trainmedic.diagnose`. */
interface DiagnoseRequest {
    readonly text: string;
    readonly uri?: string;
    readonly range?: LspRange;
    /** Extra rule pack folders for this diagnosis only. */
    readonly rulePacks?: readonly string[];
}

interface Shown {
    readonly result: DiagnoseResult;
    readonly origin: string;
    readonly locate: Locate;
}

class UserError extends Error {}

const nowhere: Locate = () => undefined;

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
        this.disposables.push(this.panel, terminals.onDidFailCommand((output) => this.offerFailedCommand(output)));
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
        this.log.info(`Diagnosing ${origin} (${request.text.length} characters)`);
        return vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'TrainMedic: diagnosing' },
            async () => parseDiagnoseResult(await this.server.execute('trainmedic.diagnose', [request])),
        );
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

    private async diagnoseSelection(): Promise<void> {
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
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

    private async listLogFiles(folder: vscode.Uri): Promise<FolderFile[]> {
        const found: FolderFile[] = [];
        const walk = async (dir: vscode.Uri): Promise<void> => {
            const entries = await vscode.workspace.fs.readDirectory(dir);
            for (const [name, type] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
                if (found.length >= FOLDER_MAX_FILES || type & vscode.FileType.SymbolicLink) {
                    continue;
                }
                const child = vscode.Uri.joinPath(dir, name);
                if (type === vscode.FileType.Directory) {
                    await walk(child);
                } else if (type === vscode.FileType.File && isLogFileName(name)) {
                    found.push({ path: child.fsPath, size: (await vscode.workspace.fs.stat(child)).size });
                }
            }
        };
        await walk(folder);
        return found;
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
        const { files, skipped } = selectWithinBudget(await this.listLogFiles(folder), FOLDER_BUDGET_BYTES);
        if (files.length === 0) {
            throw new UserError(`${folder.fsPath} has no log files (*.log, *.out, *.err, *.txt, *.json, stdout, stderr, slurm-*).`);
        }
        const firstSkipped = skipped[0];
        if (firstSkipped) {
            void vscode.window.showWarningMessage(
                `TrainMedic: ${skipped.length} file(s) left out to stay within ${FOLDER_BUDGET_BYTES / 1024 / 1024} MiB, first ${firstSkipped.path}.`,
            );
        }
        const decoder = new TextDecoder('utf-8');
        const logs: LogText[] = [];
        for (const file of files) {
            const uri = vscode.Uri.file(file.path);
            const bytes = await vscode.workspace.fs.readFile(uri);
            if (isBinary(bytes)) {
                this.log.info(`Log folder: ${file.path} is binary, left out`);
            } else {
                logs.push({ uri: uri.toString(), text: decoder.decode(bytes) });
            }
        }
        const joined = joinLogs(logs);
        const origin = `${logs.length} log file(s) in ${path.basename(folder.fsPath)}`;
        const result = await this.requestDiagnosis({ text: joined.text }, origin);
        this.present({ result, origin, locate: (ref) => joined.place(ref.line) });
    }

    private showLastDiagnosis(): void {
        if (!this.last) {
            throw new UserError('nothing diagnosed yet: run "TrainMedic: Diagnose Selection" on a log.');
        }
        this.present(this.last);
    }

    private verifyCommandLine(command: string): string {
        return verificationCommandLine(command, this.server.interpreter?.executable, process.platform);
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
