/**
 * Diagnose Cell Output: a failed notebook cell's output (its streams and its error's name,
 * message and traceback) is diagnosed by the server; the result goes to the results panel and,
 * as a diagnostic, onto the line of the cell that raised. The diagnostic goes away when the
 * cell's outputs change (it ran again). Script checks on code cells come from the server
 * through notebook sync; nothing here is needed for them.
 */
import * as vscode from 'vscode';
import { ServerManager } from './common/server';
import { DiagnoseResult, parseDiagnoseResult, rootCause } from './diagnosis';
import { CellOutputPart, cellOutputText, failedCellLine } from './cellOutput';

const ERROR_MIME = 'application/vnd.code.notebook.error';
const STREAM_MIMES = ['application/vnd.code.notebook.stdout', 'application/vnd.code.notebook.stderr'];
const ENTRY_URL = 'https://trainmedic.dev/rules/';

/** Shows a diagnosis in the results panel and the status bar. */
export type ShowDiagnosis = (result: DiagnoseResult, origin: string) => void;

function outputParts(cell: vscode.NotebookCell): CellOutputPart[] {
    const decoder = new TextDecoder();
    const parts: CellOutputPart[] = [];
    for (const output of cell.outputs) {
        for (const item of output.items) {
            if (item.mime === ERROR_MIME) {
                const error = JSON.parse(decoder.decode(item.data)) as { name?: unknown; message?: unknown; stack?: unknown };
                parts.push({
                    error: {
                        name: typeof error.name === 'string' ? error.name : 'Error',
                        message: typeof error.message === 'string' ? error.message : '',
                        stack: typeof error.stack === 'string' ? error.stack : undefined,
                    },
                });
            } else if (STREAM_MIMES.includes(item.mime)) {
                parts.push({ stream: decoder.decode(item.data) });
            }
        }
    }
    return parts;
}

/** The cell a command was run on: the cell toolbar passes it, the palette means the selected cell. */
function targetCell(argument: unknown): vscode.NotebookCell | undefined {
    if (typeof argument === 'object' && argument !== null && 'notebook' in argument && 'outputs' in argument && 'document' in argument) {
        return argument as vscode.NotebookCell;
    }
    const editor = vscode.window.activeNotebookEditor;
    if (!editor || editor.selection.start >= editor.notebook.cellCount) {
        return undefined;
    }
    return editor.notebook.cellAt(editor.selection.start);
}

function cellDiagnostic(cell: vscode.NotebookCell, result: DiagnoseResult, text: string): vscode.Diagnostic {
    const line = Math.min(failedCellLine(text) ?? 0, Math.max(cell.document.lineCount - 1, 0));
    const range = cell.document.lineAt(line).range;
    const root = rootCause(result);
    const diagnostic = root
        ? new vscode.Diagnostic(range, `Root cause: ${root.title} [${root.ruleId}]`, vscode.DiagnosticSeverity.Error)
        : new vscode.Diagnostic(range, 'TrainMedic found no known root cause in this cell’s output', vscode.DiagnosticSeverity.Information);
    diagnostic.source = 'trainmedic';
    if (root) {
        diagnostic.code = { value: root.ruleId, target: vscode.Uri.parse(`${ENTRY_URL}${root.ruleId}`) };
    }
    return diagnostic;
}

export function registerNotebookCommands(server: ServerManager, show: ShowDiagnosis): { dispose(): unknown }[] {
    const diagnostics = vscode.languages.createDiagnosticCollection('trainmedic-cell-output');

    const diagnoseCellOutput = async (argument: unknown): Promise<DiagnoseResult | undefined> => {
        const cell = targetCell(argument);
        if (cell?.kind !== vscode.NotebookCellKind.Code) {
            void vscode.window.showInformationMessage('TrainMedic: select a code cell that failed first.');
            return undefined;
        }
        const text = cellOutputText(outputParts(cell));
        if (text.trim() === '') {
            void vscode.window.showInformationMessage('TrainMedic: this cell has no error or printed output to diagnose.');
            return undefined;
        }
        const result = await vscode.window.withProgress(
            { location: vscode.ProgressLocation.Window, title: 'TrainMedic: diagnosing' },
            async () => parseDiagnoseResult(await server.execute('trainmedic.diagnose', [{ text }])),
        );
        diagnostics.set(cell.document.uri, [cellDiagnostic(cell, result, text)]);
        const name = cell.notebook.uri.path.split('/').pop() ?? 'notebook';
        show(result, `the output of cell ${cell.index + 1} of ${name}`);
        return result;
    };

    return [
        diagnostics,
        vscode.commands.registerCommand('trainmedic.diagnoseCellOutput', async (argument: unknown) => {
            try {
                return await diagnoseCellOutput(argument);
            } catch (error) {
                void vscode.window.showErrorMessage(`TrainMedic: ${error instanceof Error ? error.message : String(error)}`);
                return undefined;
            }
        }),
        vscode.workspace.onDidChangeNotebookDocument((event) => {
            for (const change of event.cellChanges) {
                if (change.outputs !== undefined) {
                    diagnostics.delete(change.cell.document.uri);
                }
            }
        }),
        vscode.workspace.onDidCloseNotebookDocument((notebook) => {
            for (const cell of notebook.getCells()) {
                diagnostics.delete(cell.document.uri);
            }
        }),
    ];
}
