/**
 * Rule-pack authoring: "New Rule from Selection" writes `<pack>/<category>/<id>.yaml` from the
 * selected log excerpt (the YAML extension validates it against the bundled rule schema through
 * the `yamlValidation` contribution), and every save of a rule file under a configured pack, or
 * under a folder named `rules` or `*-rules`, is checked by the server (in a trusted workspace):
 * the pack loads and the rule's examples behave. Problems show in the Problems panel.
 */
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import { ServerManager } from './common/server';
import { SECTION, expandPath } from './common/settings';
import { RULE_ID, problemLine, ruleScaffold } from './ruleScaffold';

const DEFAULT_PACK = 'trainmedic-rules';

interface Problem {
    readonly path: string;
    readonly line: number | null;
    readonly message: string;
}

function configuredPacks(): string[] {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const packs = vscode.workspace.getConfiguration(SECTION).get<string[]>('rulePacks') ?? [];
    return packs.map((p) => expandPath(p, { workspaceFolder: folder, userHome: os.homedir() }));
}

/** The pack a rule file belongs to: `<pack>/<category>/<id>.yaml`, the pack configured or named like one. */
function packOf(file: string): string | undefined {
    if (!/\.ya?ml$/.test(file)) {
        return undefined;
    }
    const pack = path.dirname(path.dirname(file));
    const named = /^(rules|.+-rules)$/.test(path.basename(pack));
    return named || configuredPacks().some((p) => path.resolve(p) === pack) ? pack : undefined;
}

function parseProblems(value: unknown): Problem[] {
    const problems = typeof value === 'object' && value !== null ? (value as Record<string, unknown>).problems : undefined;
    return Array.isArray(problems)
        ? problems.filter((p): p is Problem => typeof p === 'object' && p !== null && typeof (p as Problem).message === 'string')
        : [];
}

/** Writes the new rule and opens it; undefined when the user gave up or could not start. */
async function newRuleFromSelection(): Promise<vscode.TextDocument | undefined> {
    const editor = vscode.window.activeTextEditor;
    const excerpt = editor ? editor.document.getText(editor.selection) : '';
    if (!editor || excerpt.trim() === '') {
        void vscode.window.showInformationMessage('TrainMedic: select the log lines the new rule should recognise first.');
        return undefined;
    }
    const validate = (value: string): string | undefined => (RULE_ID.test(value) ? undefined : 'lower-case words joined by "-", such as nfs-stall');
    const id = await vscode.window.showInputBox({ prompt: 'The new rule’s id', placeHolder: 'nfs-stall', validateInput: validate });
    if (!id) {
        return undefined;
    }
    const category = await vscode.window.showInputBox({ prompt: 'Its category (the folder it goes in)', value: 'site', validateInput: validate });
    if (!category) {
        return undefined;
    }
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const pack = configuredPacks()[0] ?? (root ? path.join(root, DEFAULT_PACK) : undefined);
    if (!pack) {
        void vscode.window.showInformationMessage('TrainMedic: open a folder first: the rule goes into a rule pack in it.');
        return undefined;
    }
    const file = vscode.Uri.file(path.join(pack, category, `${id}.yaml`));
    try {
        await vscode.workspace.fs.stat(file);
        void vscode.window.showWarningMessage(`TrainMedic: ${file.fsPath} already exists.`);
        return undefined;
    } catch {
        // a new file, as it should be
    }
    const source = `selected in ${path.basename(editor.document.uri.path)}`;
    await vscode.workspace.fs.writeFile(file, new TextEncoder().encode(ruleScaffold(id, category, excerpt, source)));
    return (await vscode.window.showTextDocument(file)).document;
}

export function registerRuleAuthoring(server: ServerManager): { dispose(): unknown }[] {
    const diagnostics = vscode.languages.createDiagnosticCollection('trainmedic-rules');

    const check = async (document: vscode.TextDocument): Promise<void> => {
        // Rule packs are loaded only in a trusted workspace, here as everywhere.
        if (!vscode.workspace.isTrusted || document.uri.scheme !== 'file' || !packOf(document.uri.fsPath)) {
            return;
        }
        const result = await server.execute('trainmedic.testRuleFile', [{ path: document.uri.fsPath }]);
        const text = document.getText();
        const byFile = new Map<string, vscode.Diagnostic[]>();
        for (const problem of parseProblems(result)) {
            const file = path.resolve(problem.path);
            const own = file === document.uri.fsPath;
            const line = own ? Math.min(problemLine(text, problem.line, problem.message), Math.max(document.lineCount - 1, 0)) : 0;
            const range = own ? document.lineAt(line).range : new vscode.Range(0, 0, 0, 0);
            const diagnostic = new vscode.Diagnostic(range, problem.message, vscode.DiagnosticSeverity.Error);
            diagnostic.source = 'trainmedic';
            byFile.set(file, [...(byFile.get(file) ?? []), diagnostic]);
        }
        diagnostics.set(document.uri, byFile.get(document.uri.fsPath) ?? []);
        for (const [file, found] of byFile) {
            if (file !== document.uri.fsPath) {
                diagnostics.set(vscode.Uri.file(file), found);
            }
        }
    };

    return [
        diagnostics,
        vscode.commands.registerCommand('trainmedic.newRuleFromSelection', async () => {
            try {
                const created = await newRuleFromSelection();
                if (created) {
                    await check(created);
                }
            } catch (error) {
                void vscode.window.showErrorMessage(`TrainMedic: ${error instanceof Error ? error.message : String(error)}`);
            }
        }),
        vscode.workspace.onDidSaveTextDocument((document) => {
            check(document).catch((error: unknown) => {
                void vscode.window.showWarningMessage(`TrainMedic: could not check the rule: ${error instanceof Error ? error.message : String(error)}`);
            });
        }),
    ];
}
