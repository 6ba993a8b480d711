/**
 * What ran in the integrated terminals (through shell integration): each command's line, exit
 * code and the tail of its output, so a failed run can be diagnosed after the fact.
 */
import * as vscode from 'vscode';
import { TailBuffer } from './tailBuffer';

/** Output kept per command: the tail of a long run, where its failure is. */
const OUTPUT_LIMIT = 4 * 1024 * 1024;
/** How long to wait for the rest of a command's output after it ended. */
const DRAIN_TIMEOUT_MS = 2000;

/**
 * The output of the terminal's last command as the terminal shows it, when the stream missed
 * it: VS Code streams only what is written after the extension hears that the command started,
 * and a command that prints and exits at once (`cat x.log; false`) is done before that. Read
 * through the clipboard (there is no other way), which is restored.
 */
export type LastOutputReader = (terminal: vscode.Terminal) => Promise<string>;

export const copyLastCommandOutput: LastOutputReader = async (terminal) => {
    if (vscode.window.activeTerminal !== terminal) {
        return '';
    }
    const saved = await vscode.env.clipboard.readText();
    await vscode.env.clipboard.writeText('');
    try {
        await vscode.commands.executeCommand('workbench.action.terminal.copyLastCommandOutput');
        return await vscode.env.clipboard.readText();
    } catch {
        return '';
    } finally {
        await vscode.env.clipboard.writeText(saved);
    }
};

export interface CommandOutput {
    readonly terminal: vscode.Terminal;
    readonly commandLine: string;
    readonly exitCode: number | undefined;
    readonly text: string;
    readonly truncated: boolean;
}

interface Reading {
    readonly buffer: TailBuffer;
    readonly done: Promise<void>;
}

export class TerminalWatcher implements vscode.Disposable {
    private readonly reading = new Map<vscode.TerminalShellExecution, Reading>();
    private readonly last = new Map<vscode.Terminal, CommandOutput>();
    private latest: CommandOutput | undefined;
    private readonly failedEmitter = new vscode.EventEmitter<CommandOutput>();
    private readonly disposables: { dispose(): unknown }[];

    /** A command ended with a non-zero exit code. */
    readonly onDidFailCommand = this.failedEmitter.event;

    constructor(private readonly readLastOutput: LastOutputReader = copyLastCommandOutput) {
        this.disposables = [
            this.failedEmitter,
            vscode.window.onDidStartTerminalShellExecution((e) => this.reading.set(e.execution, this.read(e.execution))),
            vscode.window.onDidEndTerminalShellExecution((e) => this.ended(e)),
            vscode.window.onDidCloseTerminal((terminal) => {
                this.last.delete(terminal);
                if (this.latest?.terminal === terminal) {
                    this.latest = undefined;
                }
            }),
        ];
    }

    /** The last finished command of `terminal`, else of any terminal. */
    lastOutput(terminal: vscode.Terminal | undefined): CommandOutput | undefined {
        return (terminal && this.last.get(terminal)) ?? this.latest;
    }

    dispose(): void {
        for (const d of this.disposables) {
            d.dispose();
        }
    }

    /** Called as soon as the command starts: VS Code streams only the output written after read(). */
    private read(execution: vscode.TerminalShellExecution): Reading {
        const buffer = new TailBuffer(OUTPUT_LIMIT);
        const done = (async () => {
            try {
                for await (const data of execution.read()) {
                    buffer.push(data);
                }
            } catch {
                // The terminal went away mid-command: keep what was read.
            }
        })();
        return { buffer, done };
    }

    private async ended(event: vscode.TerminalShellExecutionEndEvent): Promise<void> {
        const reading = this.reading.get(event.execution);
        this.reading.delete(event.execution);
        if (!reading) {
            return;
        }
        await Promise.race([reading.done, new Promise((resolve) => setTimeout(resolve, DRAIN_TIMEOUT_MS))]);
        let text = reading.buffer.text();
        let truncated = reading.buffer.truncated;
        if (text.trim() === '') {
            const shown = await this.readLastOutput(event.terminal);
            text = shown.length > OUTPUT_LIMIT ? shown.slice(-OUTPUT_LIMIT) : shown;
            truncated = shown.length > OUTPUT_LIMIT;
        }
        const output: CommandOutput = {
            terminal: event.terminal,
            commandLine: event.execution.commandLine.value,
            exitCode: event.exitCode,
            text,
            truncated,
        };
        this.last.set(event.terminal, output);
        this.latest = output;
        if (output.exitCode !== undefined && output.exitCode !== 0) {
            this.failedEmitter.fire(output);
        }
    }
}
