import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { STEP_INCREMENTS, finite, stepTick, tick, valueRange } from '../../src/panel/axes';

describe('chart axes', () => {
    it('labels no split a log axis left out, instead of failing on it', () => {
        assert.equal(tick(null), '');
        assert.equal(tick(65536), '65536');
        assert.equal(tick(1.23456), '1.235');
        assert.equal(tick(131072), '1.31e5');
        assert.equal(tick(0.0001), '1e-4');
    });

    it('labels whole steps only', () => {
        assert.deepEqual([0.5, 1, 2.5, 10, null].map(stepTick), ['', '1', '', '10', '']);
        assert.ok(STEP_INCREMENTS.every(Number.isInteger));
        assert.deepEqual(STEP_INCREMENTS.slice(0, 4), [1, 2, 5, 10]);
    });

    it('gives a constant series room around its value', () => {
        assert.deepEqual(valueRange([65536, 65536, 65536], true), [32768, 131072]);
        const [low, high] = valueRange([0.00015, 0.00015], false);
        assert.ok(Math.abs(low - 0.000135) < 1e-12 && Math.abs(high - 0.000165) < 1e-12, `${low}..${high}`);
        assert.deepEqual(valueRange([0, 0], false), [-1, 1]);
    });

    it('keeps a log axis whose values stay within a decade to those values', () => {
        const [low, high] = valueRange([1.2, 2.5, 2.95], true);
        assert.ok(low > 0.9 && low < 1.2 && high > 2.95 && high < 3.7, `${low}..${high}`);
    });

    it('leaves NaN, inf and, on a log axis, what is not positive out of the range', () => {
        assert.deepEqual(finite([1, null, Number.NaN, Number.POSITIVE_INFINITY, 0, -2, 3], true), [1, 3]);
        assert.deepEqual(finite([1, null, 0, -2], false), [1, 0, -2]);
        assert.deepEqual(valueRange([null, null], true), [1, 10]);
        assert.deepEqual(valueRange([null], false), [0, 1]);
    });
});
