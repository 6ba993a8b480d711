/**
 * The last `limit` characters of a stream of chunks, in bounded memory: a failed run's cause is
 * near its end, and a terminal can print without end.
 */
export class TailBuffer {
    private chunks: string[] = [];
    private size = 0;
    private dropped = false;

    constructor(private readonly limit: number) {}

    push(chunk: string): void {
        this.chunks.push(chunk);
        this.size += chunk.length;
        let first: string | undefined;
        while (this.size > this.limit && (first = this.chunks[0]) !== undefined) {
            const excess = this.size - this.limit;
            this.dropped = true;
            if (first.length <= excess) {
                this.chunks.shift();
                this.size -= first.length;
            } else {
                this.chunks[0] = first.slice(excess);
                this.size -= excess;
            }
        }
    }

    /** Whether older output was dropped to stay within the limit. */
    get truncated(): boolean {
        return this.dropped;
    }

    /** The kept text; when truncated it starts at the first whole line kept. */
    text(): string {
        const joined = this.chunks.join('');
        if (!this.dropped) {
            return joined;
        }
        const newline = joined.indexOf('\n');
        return newline >= 0 ? joined.slice(newline + 1) : joined;
    }
}
