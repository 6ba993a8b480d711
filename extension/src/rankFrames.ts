/**
 * Traceback frames behind a launcher's rank prefix, found in one terminal line without VS Code
 * (so it is unit tested). torchrun prints `[rank3]:` (and `[default0]:` with --tee), srun -l
 * and `torchrun --role`-less tee print `3: `; after the prefix comes Python's own
 * `  File "/x/train.py", line 42, in step`.
 */

export interface RankFrame {
    /** Where the link starts in the line and how long it is: the prefix through the line number. */
    readonly start: number;
    readonly length: number;
    readonly path: string;
    /** 1-based, as Python prints it. */
    readonly line: number;
    readonly rank: number;
}

const FRAME = /^(\s*)(?:\[(?:rank|default)?(\d{1,6})\]:|(\d{1,6}):)\s*File "([^"\r\n]{1,4096})", line (\d{1,9})/;

export function rankFrame(text: string): RankFrame | undefined {
    const match = FRAME.exec(text);
    if (!match) {
        return undefined;
    }
    const indent = match[1]?.length ?? 0;
    return {
        start: indent,
        length: match[0].length - indent,
        path: match[4] ?? '',
        line: Number(match[5]),
        rank: Number(match[2] ?? match[3]),
    };
}
