/**
 * The status bar item: the last diagnosis (click to show it again), or why the server is not
 * running (click for its output).
 */
import * as vscode from 'vscode';
import { DiagnoseResult, rootCause } from './diagnosis';
import { ServerState } from './common/server';

interface Look {
    readonly text: string;
    readonly tooltip: string;
}

export class DiagnosisStatus implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('trainmedic.status', vscode.StatusBarAlignment.Left, 10);
    private lastDiagnosis: Look | undefined;

    constructor() {
        this.item.name = 'TrainMedic';
    }

    showDiagnosis(result: DiagnoseResult, origin: string): void {
        const root = rootCause(result);
        const rank = result.initiatingRank === null ? '' : ` · rank ${result.initiatingRank}`;
        this.lastDiagnosis = root
            ? { text: `$(pulse) ${root.ruleId}${rank}`, tooltip: `TrainMedic: ${root.title}${rank}\n${origin}\nClick to show the diagnosis.` }
            : { text: '$(pass) TrainMedic: no root cause', tooltip: `TrainMedic found no root cause in ${origin}.\nClick to show the diagnosis.` };
        this.showLast();
    }

    showServerState(state: ServerState): void {
        if (state === 'noPython' || state === 'failed') {
            this.item.text = '$(warning) TrainMedic';
            this.item.tooltip =
                state === 'noPython'
                    ? 'TrainMedic: no Python 3.10+ found to run the server. Click for details.'
                    : 'TrainMedic: the server did not start. Click for details.';
            this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
            this.item.command = 'trainmedic.showOutput';
            this.item.show();
        } else if (state === 'running') {
            this.showLast();
        }
    }

    dispose(): void {
        this.item.dispose();
    }

    private showLast(): void {
        this.item.backgroundColor = undefined;
        if (!this.lastDiagnosis) {
            this.item.hide();
            return;
        }
        this.item.text = this.lastDiagnosis.text;
        this.item.tooltip = this.lastDiagnosis.tooltip;
        this.item.command = 'trainmedic.showLastDiagnosis';
        this.item.show();
    }
}
