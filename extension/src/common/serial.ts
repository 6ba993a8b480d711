/**
 * Serialised, coalesced runs of one task (server restarts): a call while a run is in progress
 * queues exactly one more run after it, and every further call joins that queued run, which will
 * see the latest settings anyway.
 */
export class CoalescingRunner {
    private current: Promise<void> | undefined;
    private queued: Promise<void> | undefined;

    constructor(private readonly task: () => Promise<void>) {}

    run(): Promise<void> {
        if (!this.current) {
            this.current = this.task().finally(() => {
                this.current = undefined;
            });
            return this.current;
        }
        this.queued ??= this.current
            .catch(() => undefined)
            .then(() => {
                this.queued = undefined;
                return this.run();
            });
        return this.queued;
    }

    /** Resolves when no run is in progress or queued. */
    async idle(): Promise<void> {
        while (this.current || this.queued) {
            await (this.queued ?? this.current)?.catch(() => undefined);
        }
    }
}
