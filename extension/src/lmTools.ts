/**
 * Language-model tools for agent mode (trainmedic_diagnose, trainmedic_check,
 * trainmedic_explain), answered by the local language server. A call that would read files
 * outside the workspace asks the user first. With TRAINMEDIC_TEST_COMMANDS=1 in the
 * environment, "TrainMedic (test): Invoke Language Model Tool" calls a tool through
 * vscode.lm.invokeTool, as an agent does, and shows what the model would read.
 */
import * as vscode from 'vscode';
import { ServerManager } from './common/server';
import { parseDiagnoseResult } from './diagnosis';
import { TerminalWatcher } from './terminal';
import { ServerCall, TOOL_NAMES, ToolName, ToolInputError, outsideWorkspace, parseInvocation, serverCall } from './toolInputs';

const TEST_COMMAND = 'trainmedic.test.invokeTool';
const TEST_CONTEXT = 'trainmedic.testCommands';

function workspaceRoots(): string[] {
    return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

function stringField(value: unknown, key: string): string {
    const field = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    return typeof field === 'string' ? field : '';
}

/** `report`, and the answer's notes (`key`: what reading skipped or cut) below it. */
function withNotes(report: string, value: unknown, key: 'notes' | 'warnings'): string {
    const notes = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
    const lines = Array.isArray(notes) ? notes.filter((n): n is string => typeof n === 'string') : [];
    return lines.length === 0 ? report : `${report.trimEnd()}\n\n**Notes**\n\n${lines.map((n) => `- ${n}`).join('\n')}\n`;
}

class TrainmedicTool implements vscode.LanguageModelTool<unknown> {
    constructor(
        private readonly name: ToolName,
        private readonly server: ServerManager,
        private readonly terminals: TerminalWatcher,
    ) {}

    prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<unknown>): vscode.PreparedToolInvocation {
        let call: ServerCall;
        try {
            call = serverCall(this.name, options.input, workspaceRoots());
        } catch {
            return {}; // invoke() answers the model with what to change
        }
        const outside = outsideWorkspace(call, workspaceRoots());
        const verb = call.kind === 'check' ? 'checking' : call.kind === 'explain' ? 'explaining' : 'diagnosing';
        return {
            invocationMessage: `TrainMedic: ${verb}…`,
            confirmationMessages:
                outside.length === 0
                    ? undefined
                    : {
                          title: 'Read files outside the workspace?',
                          message: new vscode.MarkdownString(
                              `TrainMedic will read these files on this machine (nothing leaves it):\n\n${outside.map((p) => `- \`${p}\``).join('\n')}`,
                          ),
                      },
        };
    }

    async invoke(options: vscode.LanguageModelToolInvocationOptions<unknown>): Promise<vscode.LanguageModelToolResult> {
        const call = serverCall(this.name, options.input, workspaceRoots());
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(await this.answer(call))]);
    }

    private async answer(call: ServerCall): Promise<string> {
        switch (call.kind) {
            case 'diagnoseText':
                return this.diagnoseText(call.text);
            case 'diagnoseSource':
                return this.diagnoseText(this.sourceText(call.source));
            case 'diagnosePaths': {
                const result = await this.server.execute('trainmedic.diagnose', [{ paths: call.paths }]);
                return withNotes(stringField(result, 'markdown'), result, 'warnings');
            }
            case 'check': {
                const result = await this.server.execute('trainmedic.check', [{ paths: call.paths }]);
                return withNotes(stringField(result, 'report'), result, 'notes');
            }
            case 'explain':
                return stringField(await this.server.execute('trainmedic.explain', [call.ruleId]), 'markdown');
        }
    }

    private async diagnoseText(text: string): Promise<string> {
        return parseDiagnoseResult(await this.server.execute('trainmedic.diagnose', [{ text }])).markdown;
    }

    private sourceText(source: 'selection' | 'terminal'): string {
        if (source === 'terminal') {
            const output = this.terminals.lastOutput(vscode.window.activeTerminal);
            if (!output || output.text.trim() === '') {
                throw new ToolInputError('no terminal command has finished with output yet (terminal shell integration must be on)');
            }
            return output.text;
        }
        const editor = vscode.window.activeTextEditor;
        if (!editor) {
            throw new ToolInputError('no editor is open: pass the text itself, or paths');
        }
        return editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection);
    }
}

/** Runs one tool the way an agent does, and opens what the model would read. */
async function invokeFromTest(): Promise<string | undefined> {
    const line = await vscode.window.showInputBox({
        prompt: 'A tool name and its JSON input',
        placeHolder: 'trainmedic_explain {"rule_id": "amp-loss-scale"}',
    });
    if (!line) {
        return undefined;
    }
    const { tool, input } = parseInvocation(line);
    const result = await vscode.lm.invokeTool(tool, { input: input as object, toolInvocationToken: undefined });
    const text = result.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : '')).join('');
    const document = await vscode.workspace.openTextDocument({ language: 'markdown', content: `<!-- ${tool} -->\n${text}` });
    await vscode.window.showTextDocument(document);
    return text;
}

export function registerLanguageModelTools(server: ServerManager, terminals: TerminalWatcher): { dispose(): unknown }[] {
    const registered: { dispose(): unknown }[] = TOOL_NAMES.map((name) => vscode.lm.registerTool(name, new TrainmedicTool(name, server, terminals)));
    if (process.env.TRAINMEDIC_TEST_COMMANDS === '1') {
        void vscode.commands.executeCommand('setContext', TEST_CONTEXT, true);
        registered.push(
            vscode.commands.registerCommand(TEST_COMMAND, async () => {
                try {
                    return await invokeFromTest();
                } catch (error) {
                    void vscode.window.showErrorMessage(`TrainMedic (test): ${error instanceof Error ? error.message : String(error)}`);
                    return undefined;
                }
            }),
        );
    }
    return registered;
}
