/**
 * A notebook cell's output as the log text to diagnose, without VS Code (so it is unit
 * tested): the streams it printed and its error (name, message and traceback, as the
 * notebook's error output holds them), with the terminal colours IPython adds taken out.
 */

/** The error of a cell output (`application/vnd.code.notebook.error`). */
export interface CellError {
    readonly name: string;
    readonly message: string;
    readonly stack?: string;
}

/** What a cell printed, in output order: stream text and errors. */
export type CellOutputPart = { readonly stream: string } | { readonly error: CellError };

const ESC = String.fromCharCode(0x1b);
const BEL = String.fromCharCode(0x07);
// CSI sequences (colours, cursor moves), OSC sequences (titles, links) and two-byte escapes.
const ANSI = new RegExp(`${ESC}(?:\\[[0-?]*[ -/]*[@-~]|\\][^${BEL}${ESC}]*(?:${BEL}|${ESC}\\\\)?|[@-Z\\\\-_])`, 'g');

export function stripAnsi(text: string): string {
    return text.replace(ANSI, '');
}

/** The error as IPython showed it: the traceback, which ends with "name: message" (added when it does not). */
export function errorText(error: CellError): string {
    const last = `${error.name}: ${error.message}`;
    const stack = stripAnsi(error.stack ?? '').trimEnd();
    if (stack === '') {
        return `${last}\n`;
    }
    const lines = stack.split('\n');
    return lines.some((line) => line.startsWith(`${error.name}:`) || line.endsWith(last)) ? `${stack}\n` : `${stack}\n${last}\n`;
}

export function cellOutputText(parts: readonly CellOutputPart[]): string {
    return parts
        .map((part) => {
            if ('error' in part) {
                return errorText(part.error);
            }
            const text = stripAnsi(part.stream);
            return text === '' || text.endsWith('\n') ? text : `${text}\n`;
        })
        .join('');
}

/** The 0-based line of the cell that raised, from IPython's "Cell In[4], line 2" frame. */
export function failedCellLine(text: string): number | undefined {
    const match = /^Cell In ?\[\d*\], line (\d+)/m.exec(text);
    return match ? Math.max(Number(match[1]) - 1, 0) : undefined;
}
