import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CoalescingRunner } from '../../src/common/serial';

/** A task whose runs finish only when the test says, recording starts and ends. */
function controlled(): { task: () => Promise<void>; events: string[]; finish: () => void } {
    const events: string[] = [];
    const pending: (() => void)[] = [];
    let runs = 0;
    return {
        events,
        task: () => {
            const n = ++runs;
            events.push(`start ${n}`);
            return new Promise<void>((resolve) => {
                pending.push(() => {
                    events.push(`end ${n}`);
                    resolve();
                });
            });
        },
        finish: () => pending.shift()?.(),
    };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('serialised, coalesced restarts', () => {
    it('never overlaps two runs and folds a burst of calls into one more run', async () => {
        const { task, events, finish } = controlled();
        const runner = new CoalescingRunner(task);
        const first = runner.run();
        const queued = [runner.run(), runner.run(), runner.run()];
        assert.deepEqual(events, ['start 1']);
        finish();
        await first;
        await tick();
        assert.deepEqual(events, ['start 1', 'end 1', 'start 2']);
        finish();
        await Promise.all(queued);
        assert.deepEqual(events, ['start 1', 'end 1', 'start 2', 'end 2']);
    });

    it('runs again after a failed run, and idle() waits for both', async () => {
        let calls = 0;
        const runner = new CoalescingRunner(() => {
            calls += 1;
            return calls === 1 ? Promise.reject(new Error('no python')) : Promise.resolve();
        });
        const failed = runner.run();
        const again = runner.run();
        await assert.rejects(failed, /no python/);
        await again;
        await runner.idle();
        assert.equal(calls, 2);
    });

    it('starts a fresh run once idle', async () => {
        let calls = 0;
        const runner = new CoalescingRunner(() => {
            calls += 1;
            return Promise.resolve();
        });
        await runner.run();
        await runner.run();
        assert.equal(calls, 2);
    });
});
