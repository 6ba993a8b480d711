import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MalformedResultError, failedFirst, parseDiagnoseResult } from '../../src/diagnosis';
import { Locate, buildPanelModel } from '../../src/panel/model';

/** The server's answers (scripts/diagnosis-fixtures.mjs writes them, `npm test` checks them). */
const fixture = (name: string): Record<string, unknown> =>
    JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'test', 'fixtures', 'diagnosis', name), 'utf8')) as Record<string, unknown>;
/** test/fixtures/workspace/torchrun-amp.log: three ranks, rank 0's loss scale collapses. */
const raw = fixture('torchrun-amp.json');

const inDocument =
    (uri: string, firstLine: number): Locate =>
    (ref) => ({ uri, line: firstLine + ref.line - 1 });

describe('diagnosis → panel model', () => {
    const result = parseDiagnoseResult(raw);

    it('shows the root cause, its fix and verification command', () => {
        const model = buildPanelModel(result, 'torchrun-amp.log', inDocument('file:///ws/torchrun-amp.log', 0));
        assert.equal(model.root?.ruleId, 'amp-loss-scale');
        assert.equal(model.root.confidencePercent, 100);
        assert.match(model.root.fix, /torch\.amp\.GradScaler\("cuda"\)/);
        assert.equal(model.root.verify, 'trainmedic probe amp');
    });

    it('names the initiating rank and why, in the server’s words, and links its first failure from the JSON', () => {
        const model = buildPanelModel(result, 'x', inDocument('file:///ws/torchrun-amp.log', 0));
        assert.equal(model.initiatingRank, 0);
        assert.equal(model.why, 'Rank 0 failed first with a root cause (amp-loss-scale, torchrun-amp.log:16).');
        assert.equal(model.whyLine?.label, 'torchrun-amp.log:16');
    });

    it('names lines by their place in the document, not in the selection', () => {
        const model = buildPanelModel(result, 'x', inDocument('file:///ws/run%201.log', 100));
        assert.equal(model.whyLine?.label, 'run 1.log:116');
        assert.equal(model.evidence[0]?.link.label, 'run 1.log:116');
    });

    it('lists every rank, the initiating one first, with its first failure line', () => {
        const model = buildPanelModel(result, 'x', inDocument('file:///ws/torchrun-amp.log', 0));
        assert.deepEqual(
            model.ranks.map((r) => [r.rank, r.status, r.initiating, r.firstFailure?.label]),
            [
                [0, 'failed-first', true, 'torchrun-amp.log:16'],
                [1, 'killed', false, undefined],
                [2, 'killed', false, undefined],
            ],
        );
        assert.deepEqual(model.ranks[0]?.ruleIds, ['amp-loss-scale']);
    });

    it('maps evidence lines into the document, offset by where the selection starts', () => {
        const model = buildPanelModel(result, 'x', inDocument('file:///ws/torchrun-amp.log', 100));
        const first = model.evidence[0];
        assert.equal(first?.ruleId, 'amp-loss-scale');
        assert.equal(first.role, 'root');
        assert.match(first.text, /step 9 loss=14849376256\.0000 scale=128\.0/);
        assert.deepEqual(model.places[first.link.place ?? -1], { uri: 'file:///ws/torchrun-amp.log', line: 115 });
        // The root-cause line is both a rank's first failure and evidence: one place for both.
        assert.equal(model.ranks[0]?.firstFailure?.place, first.link.place);
    });

    it('leaves lines without a place (terminal output) unlinked', () => {
        const model = buildPanelModel(result, 'x', () => undefined);
        assert.equal(model.places.length, 0);
        assert.ok(model.evidence.every((e) => e.link.place === undefined));
        const terminal = parseDiagnoseResult(JSON.parse(JSON.stringify(raw).replaceAll('torchrun-amp.log', '<text>')));
        const fromTerminal = buildPanelModel(terminal, 'x', () => undefined);
        assert.equal(fromTerminal.whyLine?.label, 'line 16');
        assert.equal(fromTerminal.evidence[0]?.link.label, 'line 16');
    });

    it('relates the entries the root cause’s JSON names and the other findings', () => {
        const model = buildPanelModel(result, 'x', () => undefined);
        assert.deepEqual(model.related, ['amp-bf16-vs-fp16', 'nan-loss', 'gradient-explosion', 'elastic-child-failed']);
    });

    it('charts each metric in a fixed order, the shown rank first, and marks its anomalies at their step', () => {
        const withSeries = parseDiagnoseResult({
            ...raw,
            series: {
                grad_norm: { rank: 1, points: [[1, 2.5]], anomalies: [] },
                loss_scale: {
                    rank: 0,
                    points: [
                        [1, 65536],
                        [2, 32768],
                        [3, null],
                    ],
                    anomalies: [
                        { detector: 'scale-collapse', rank: 0, path: '/work/logs/torchrun-amp.log', line: 9, x: 2 },
                        { detector: 'scale-collapse', rank: 0, path: '/work/logs/torchrun-amp.log', line: 10 },
                    ],
                    other_ranks: { '2': [[1, 65536], [2, 65536]] },
                },
                loss: { rank: 0, points: [[1, 7.1]], anomalies: [] },
            },
        });
        const model = buildPanelModel(withSeries, 'x', inDocument('file:///ws/a.log', 0));
        assert.deepEqual(
            model.charts.map((c) => [c.title, c.logScale, c.rank, c.series.map((s) => s.rank)]),
            [
                ['Loss', false, 0, [0]],
                ['Loss scale', true, 0, [0, 2]],
                ['Gradient norm', true, 1, [1]],
            ],
        );
        const [shown, other] = model.charts[1]?.series ?? [];
        assert.deepEqual(shown?.steps, [1, 2, 3]);
        assert.deepEqual(shown.values, [65536, 32768, null]);
        assert.deepEqual(shown.marks, [null, 32768, null]);
        assert.deepEqual(other?.marks, [null, null]); // rank 0's anomaly is not rank 2's
        assert.deepEqual(
            model.charts[1]?.anomalies.map((a) => [a.detector, a.link.label]),
            [
                ['scale-collapse', 'a.log:9'],
                ['scale-collapse', 'a.log:10'],
            ],
        );
    });

    it('reads each evidence line’s rank from its JSON field', () => {
        // test/fixtures/launchers/torchrun-hang.log: rank 3 hangs, ranks 0-2 time out.
        const hang = buildPanelModel(parseDiagnoseResult(fixture('torchrun-hang.json')), 'x', () => undefined);
        assert.equal(hang.root?.ruleId, 'collective-hang');
        assert.equal(hang.initiatingRank, 3);
        const timeouts = hang.evidence.filter((e) => e.ruleId === 'nccl-timeout');
        assert.deepEqual(timeouts.map((e) => e.rank), [0, 1, 2]);
        for (const row of timeouts) {
            assert.ok(row.text.startsWith(`[rank${row.rank}]:`), row.text);
        }
    });

    it('links a folder of per-rank files to each file, its rank read from the file’s name', () => {
        // tests/fixtures/per-rank-files: rank0.log … rank3.log without prefixes, and launcher.log.
        const onDisk: Locate = (ref) => ({ uri: `file:///runs/${ref.path}`, line: ref.line - 1 });
        const model = buildPanelModel(parseDiagnoseResult(fixture('per-rank-files.json')), 'x', onDisk);
        assert.equal(model.initiatingRank, 1);
        assert.deepEqual(
            model.ranks.map((r) => [r.rank, r.status, r.firstFailure?.label]),
            [
                [1, 'failed-first', 'rank1.log:22'],
                [0, 'failed-collateral', 'rank0.log:17'],
                [2, 'failed-collateral', 'rank2.log:17'],
                [3, 'killed', undefined],
            ],
        );
        assert.deepEqual([model.evidence[0]?.rank, model.evidence[0]?.link.label], [1, 'rank1.log:22']);
        assert.deepEqual(model.places[model.evidence[0]?.link.place ?? -1], { uri: 'file:///runs/per-rank-files/rank1.log', line: 21 });
    });

    it('says when no root cause was found', () => {
        const none = parseDiagnoseResult({ initiating_rank: null, initiating_reason: '', diagnoses: [], ranks: {}, markdown: '' });
        const model = buildPanelModel(none, 'x', () => undefined);
        assert.equal(model.root, undefined);
        assert.equal(model.why, 'The text names no ranks: it reads as the output of a single process.');
    });
});

describe('parsing the server’s answer', () => {
    it('names the first malformed field', () => {
        const broken = { ...raw, diagnoses: [{ ...(raw.diagnoses as object[])[0], confidence: 'high' }] };
        assert.throws(() => parseDiagnoseResult(broken), new MalformedResultError('diagnoses[0].confidence'));
        assert.throws(() => parseDiagnoseResult({ ...raw, ranks: { zero: {} } }), new MalformedResultError('ranks.zero'));
        assert.throws(() => parseDiagnoseResult(null), new MalformedResultError('the result'));
    });

    it('says a rank failed first only when its basis orders the ranks', () => {
        const answer = (basis: string) => parseDiagnoseResult({ initiating_rank: 3, initiating_basis: basis, diagnoses: [] });
        assert.equal(failedFirst(answer('exited-by-itself')), true);
        assert.equal(failedFirst(answer('first-root-cause')), true);
        assert.equal(failedFirst(answer('only-rank-in-input')), false);
        assert.equal(failedFirst(parseDiagnoseResult({ initiating_rank: null, initiating_basis: 'undetermined', diagnoses: [] })), false);
    });

    it('accepts an answer without the optional fields', () => {
        const minimal = parseDiagnoseResult({ initiating_rank: null, diagnoses: [] });
        assert.deepEqual(minimal, {
            initiatingRank: null,
            initiatingReason: '',
            initiatingBasis: 'undetermined',
            initiatingHost: null,
            findings: [],
            ranks: [],
            markdown: '',
            series: [],
            warnings: [],
        });
    });
});
