/**
 * Logs too big for VS Code to sync to extensions (over 50 MB, shown after "Open Anyway"): no
 * text document ever reaches the language server, so when one is opened in a tab it is handed
 * over by path, for the server to read from disk.
 */
import * as vscode from 'vscode';

/** VS Code gives extensions no text document for a file of this size or more. */
export const SYNC_LIMIT_BYTES = 50 * 1024 * 1024;

export class LargeLogs implements vscode.Disposable {
    private readonly seen = new Set<string>();
    private readonly subscription: vscode.Disposable;

    constructor(
        private readonly opened: (file: vscode.Uri) => Promise<void>,
        /** Its last tab closed: its diagnostics go, as a closed log's do. */
        closed: (file: vscode.Uri) => void,
    ) {
        this.subscription = vscode.window.tabGroups.onDidChangeTabs((event) => {
            for (const tab of [...event.opened, ...event.changed]) {
                void this.look(tab);
            }
            for (const tab of event.closed) {
                const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
                const key = uri?.toString();
                const open = vscode.window.tabGroups.all.some((g) => g.tabs.some((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key));
                if (uri && key && !open && this.seen.delete(key)) {
                    closed(uri);
                }
            }
        });
    }

    dispose(): void {
        this.subscription.dispose();
    }

    private async look(tab: vscode.Tab): Promise<void> {
        const uri = tab.input instanceof vscode.TabInputText ? tab.input.uri : undefined;
        if (uri?.scheme !== 'file' || this.seen.has(uri.toString())) {
            return;
        }
        const size = await vscode.workspace.fs.stat(uri).then((s) => s.size, () => 0);
        if (size < SYNC_LIMIT_BYTES || this.seen.has(uri.toString())) {
            return;
        }
        this.seen.add(uri.toString());
        await this.opened(uri);
    }
}
