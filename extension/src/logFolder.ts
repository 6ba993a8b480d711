/**
 * Which files of a log folder (a torchrun --log-dir, a folder of per-rank files) are read:
 * the same names the CLI reads from a directory. Pure.
 */
import * as path from 'path';

const LOG_SUFFIXES = new Set(['.log', '.out', '.err', '.txt', '.json']);
const LOG_NAMES = new Set(['stdout', 'stderr']);

export function isLogFileName(name: string): boolean {
    const suffix = path.extname(name);
    const stem = path.basename(name, suffix);
    return LOG_SUFFIXES.has(suffix) || LOG_NAMES.has(stem) || name.startsWith('slurm-');
}

const SNIFF_BYTES = 8192;

/** A NUL byte in the first block marks a binary file, as the CLI (and grep and git) decide. */
export function isBinary(bytes: Uint8Array): boolean {
    return bytes.subarray(0, SNIFF_BYTES).includes(0);
}

export interface FolderFile {
    readonly path: string;
    readonly size: number;
}

export interface FolderSelection {
    readonly files: readonly FolderFile[];
    readonly skipped: readonly FolderFile[];
}

/** Files in path order until `budget` bytes; the rest are skipped and named to the user. */
export function selectWithinBudget(files: readonly FolderFile[], budget: number): FolderSelection {
    const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const chosen: FolderFile[] = [];
    const skipped: FolderFile[] = [];
    let used = 0;
    for (const file of sorted) {
        if (used + file.size <= budget) {
            chosen.push(file);
            used += file.size;
        } else {
            skipped.push(file);
        }
    }
    return { files: chosen, skipped };
}

export interface LogText {
    readonly uri: string;
    readonly text: string;
}

export interface JoinedLogs {
    /** Every file's text, each ending with a newline, one after the other. */
    readonly text: string;
    /** Where 1-based line `line` of `text` came from: the file and its 0-based line. */
    place(line: number): { uri: string; line: number } | undefined;
}

/** The server diagnoses one text: the folder's files joined, with a map back to each file. */
export function joinLogs(logs: readonly LogText[]): JoinedLogs {
    const starts: { uri: string; first: number; count: number }[] = [];
    const texts: string[] = [];
    let next = 1;
    for (const log of logs) {
        if (log.text === '') {
            continue;
        }
        const text = log.text.endsWith('\n') ? log.text : `${log.text}\n`;
        const count = text.split('\n').length - 1;
        starts.push({ uri: log.uri, first: next, count });
        texts.push(text);
        next += count;
    }
    return {
        text: texts.join(''),
        place: (line) => {
            const file = starts.find((s) => line >= s.first && line < s.first + s.count);
            return file && { uri: file.uri, line: line - file.first };
        },
    };
}
