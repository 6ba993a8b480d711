/**
 * The results panel: one webview beside the editor, showing the latest diagnosis.
 */
import { randomBytes } from 'crypto';
import * as vscode from 'vscode';
import { DiagnoseResult } from '../diagnosis';
import { renderPanelHtml } from './html';
import { Locate, PanelModel, buildPanelModel } from './model';

const VIEW_TYPE = 'trainmedic.results';

export interface PanelActions {
    /** The exact line Run in terminal types, for its tooltip. */
    verifyCommandLine(command: string): string;
    runVerification(command: string): Promise<void>;
    copy(text: string, what: string): Promise<void>;
    showEntry(ruleId: string): Promise<void>;
}

type Message =
    | { type: 'reveal'; place: number }
    | { type: 'showEntry'; ruleId: string }
    | { type: 'runVerification' | 'copyFix' | 'copyVerify' };

function parseMessage(value: unknown): Message | undefined {
    const m = value as Partial<Record<string, unknown>> | undefined;
    switch (m?.type) {
        case 'reveal':
            return typeof m.place === 'number' && Number.isInteger(m.place) ? { type: 'reveal', place: m.place } : undefined;
        case 'showEntry':
            return typeof m.ruleId === 'string' ? { type: 'showEntry', ruleId: m.ruleId } : undefined;
        case 'runVerification':
        case 'copyFix':
        case 'copyVerify':
            return { type: m.type };
        default:
            return undefined;
    }
}

export class ResultsPanel implements vscode.Disposable {
    private panel: vscode.WebviewPanel | undefined;
    private model: PanelModel | undefined;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        private readonly extensionUri: vscode.Uri,
        private readonly actions: PanelActions,
    ) {
        this.disposables.push(
            vscode.workspace.onDidGrantWorkspaceTrust(() => {
                this.render();
            }),
        );
    }

    show(result: DiagnoseResult, origin: string, locate: Locate): void {
        this.model = buildPanelModel(result, origin, locate);
        if (!this.panel) {
            this.panel = vscode.window.createWebviewPanel(
                VIEW_TYPE,
                'TrainMedic',
                { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
                {
                    enableScripts: true,
                    enableCommandUris: false,
                    localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview')],
                },
            );
            this.panel.onDidDispose(() => {
                this.panel = undefined;
            });
            this.panel.webview.onDidReceiveMessage((message: unknown) => this.handle(message));
        } else {
            this.panel.reveal(undefined, true);
        }
        this.render();
    }

    dispose(): void {
        this.panel?.dispose();
        for (const d of this.disposables) {
            d.dispose();
        }
    }

    private render(): void {
        const { panel, model } = this;
        if (!panel || !model) {
            return;
        }
        const webview = panel.webview;
        const asset = (name: string): string => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview', name)).toString();
        panel.title = model.root ? `TrainMedic: ${model.root.ruleId}` : 'TrainMedic: no root cause';
        webview.html = renderPanelHtml(
            model,
            { cspSource: webview.cspSource, nonce: randomBytes(16).toString('base64'), scriptUri: asset('main.js'), styleUri: asset('main.css') },
            { trusted: vscode.workspace.isTrusted, verifyCommandLine: model.root && this.actions.verifyCommandLine(model.root.verify) },
        );
    }

    private async handle(raw: unknown): Promise<void> {
        const message = parseMessage(raw);
        const model = this.model;
        if (!message || !model) {
            return;
        }
        switch (message.type) {
            case 'reveal': {
                const place = model.places[message.place];
                if (place) {
                    const line = new vscode.Range(place.line, 0, place.line, 0);
                    // Through the workbench, not a text document: a log over 50 MB has none.
                    const options: vscode.TextDocumentShowOptions = { selection: line, viewColumn: vscode.ViewColumn.One };
                    await vscode.commands.executeCommand('vscode.open', vscode.Uri.parse(place.uri), options);
                }
                break;
            }
            case 'showEntry':
                await this.actions.showEntry(message.ruleId);
                break;
            case 'runVerification':
                if (model.root) {
                    await this.actions.runVerification(model.root.verify);
                }
                break;
            case 'copyFix':
                if (model.root) {
                    await this.actions.copy(model.root.fix, 'The fix');
                }
                break;
            case 'copyVerify':
                if (model.root) {
                    await this.actions.copy(model.root.verify, 'The verification command');
                }
                break;
        }
    }
}
