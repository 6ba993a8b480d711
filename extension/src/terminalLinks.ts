/**
 * Terminal links on traceback frames behind a rank prefix (`[rank3]:   File "/x/train.py",
 * line 42`): the link opens the file at that line. A relative path starts at the terminal's
 * current folder (shell integration), else at the workspace folder.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { RankFrame, rankFrame } from './rankFrames';

class FrameLink extends vscode.TerminalLink {
    constructor(
        frame: RankFrame,
        readonly cwd: vscode.Uri | undefined,
    ) {
        super(frame.start, frame.length, `Open ${path.basename(frame.path)} at line ${frame.line} (rank ${frame.rank})`);
        this.file = frame.path;
        this.line = frame.line;
    }

    readonly file: string;
    readonly line: number;
}

function resolve(link: FrameLink): vscode.Uri {
    if (path.isAbsolute(link.file)) {
        return vscode.Uri.file(link.file);
    }
    const base = link.cwd ?? vscode.workspace.workspaceFolders?.[0]?.uri;
    return base ? vscode.Uri.joinPath(base, link.file) : vscode.Uri.file(path.resolve(link.file));
}

class RankFrameLinks implements vscode.TerminalLinkProvider<FrameLink> {
    provideTerminalLinks(context: vscode.TerminalLinkContext): FrameLink[] {
        const frame = rankFrame(context.line);
        if (!frame) {
            return [];
        }
        return [new FrameLink(frame, context.terminal.shellIntegration?.cwd)];
    }

    async handleTerminalLink(link: FrameLink): Promise<void> {
        const uri = resolve(link);
        try {
            await vscode.workspace.fs.stat(uri);
        } catch {
            void vscode.window.showWarningMessage(`TrainMedic: ${uri.fsPath} is not on this machine (the frame may come from another node).`);
            return;
        }
        const at = new vscode.Position(Math.max(link.line - 1, 0), 0);
        await vscode.window.showTextDocument(uri, { selection: new vscode.Range(at, at), preview: false });
    }
}

export function registerTerminalLinks(): vscode.Disposable {
    return vscode.window.registerTerminalLinkProvider(new RankFrameLinks());
}
