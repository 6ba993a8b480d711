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
