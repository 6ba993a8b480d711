/**
 * The charts' axes, for every shape of series: the value range (a constant, a log axis whose
 * values stay within a decade, NaN and inf left out) and the tick labels (whole steps only;
 * the splits a log axis has no room for come as null). Pure, so it is unit-tested; the webview
 * draws with it.
 */

/** Axis numbers that fit: 1.4e10 rather than 14,000,000,000, and nothing for the splits (null)
 *  a log axis has no room to label. */
export function tick(value: number | null): string {
    if (value === null || !Number.isFinite(value)) {
        return '';
    }
    const size = Math.abs(value);
    if (size !== 0 && (size >= 1e5 || size < 1e-3)) {
        return value.toExponential(2).replace(/\.?0+e/, 'e').replace('e+', 'e');
    }
    // A whole number as it is (a loss scale of 65536, not 65540).
    return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(4)));
}

/** Step ticks at whole steps only: 1, 2, 5 and their powers of ten. */
export const STEP_INCREMENTS = Array.from({ length: 10 }, (_, k) => [1, 2, 5].map((m) => m * 10 ** k)).flat();

export function stepTick(value: number | null): string {
    return value === null || !Number.isInteger(value) ? '' : String(value);
}

export function finite(values: (number | null)[], log: boolean): number[] {
    return values.filter((v): v is number => v !== null && Number.isFinite(v) && (!log || v > 0));
}

/**
 * The value axis's range, whatever the series' shape: a constant gets room around it, and a log
 * axis spans its values with a quarter's room, not the empty decades around them.
 */
export function valueRange(values: (number | null)[], log: boolean): [number, number] {
    const kept = finite(values, log);
    if (kept.length === 0) {
        return log ? [1, 10] : [0, 1];
    }
    const low = Math.min(...kept);
    const high = Math.max(...kept);
    if (log) {
        return low === high ? [low / 2, high * 2] : [low / 1.25, high * 1.25];
    }
    const pad = low === high ? Math.abs(low) * 0.1 || 1 : (high - low) * 0.08;
    return [low - pad, high + pad];
}
