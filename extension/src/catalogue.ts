/**
 * Catalogue entries, rendered by the server (`trainmedic.explain`) and shown in VS Code's
 * Markdown preview through a read-only virtual document.
 */
import * as vscode from 'vscode';
import { parseCatalogueEntry, parseRuleList } from './diagnosis';
import { ServerManager } from './common/server';

export const ENTRY_SCHEME = 'trainmedic-entry';

function entryUri(ruleId: string): vscode.Uri {
    return vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/${ruleId}.md` });
}

export class CatalogueEntries implements vscode.TextDocumentContentProvider {
    constructor(private readonly server: ServerManager) {}

    async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
        const ruleId = uri.path.replace(/^\//, '').replace(/\.md$/, '');
        const entry = parseCatalogueEntry(await this.server.execute('trainmedic.explain', [ruleId]));
        return entry.markdown;
    }

    async show(ruleId: string): Promise<void> {
        const uri = entryUri(ruleId);
        try {
            await vscode.commands.executeCommand('markdown.showPreview', uri);
        } catch {
            // No Markdown preview in this editor: show the entry's source instead.
            await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: true });
        }
    }

    /** A quick pick over the whole catalogue; the chosen entry opens. */
    async pick(): Promise<void> {
        const rules = parseRuleList(await this.server.execute('trainmedic.listRules', []));
        const chosen = await vscode.window.showQuickPick(
            rules.map((r) => ({ label: r.title, description: r.id, detail: `${r.category} · ${r.role}`, ruleId: r.id })),
            { title: 'TrainMedic catalogue', placeHolder: 'Type a failure, a symptom or a rule id', matchOnDescription: true, matchOnDetail: true },
        );
        if (chosen) {
            await this.show(chosen.ruleId);
        }
    }
}
