import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cellOutputText, errorText, failedCellLine, stripAnsi } from '../../src/cellOutput';
import { rankFrame } from '../../src/rankFrames';
import { RULE_ID, patternFrom, problemLine, ruleScaffold } from '../../src/ruleScaffold';
import { ToolInputError, outsideWorkspace, parseInvocation, serverCall } from '../../src/toolInputs';

const ESC = '\u001b';

describe('cell output', () => {
    // IPython's traceback of a CUDA OOM, as the notebook's error output holds it (colours included).
    const stack = [
        `${ESC}[0;31mOutOfMemoryError${ESC}[0m                          Traceback (most recent call last)`,
        `Cell ${ESC}[0;32mIn[4], line 2${ESC}[0m\n${ESC}[0;32m----> 2${ESC}[0m out = model(batch)`,
        `${ESC}[0;31mOutOfMemoryError${ESC}[0m: CUDA out of memory. Tried to allocate 2.00 GiB.`,
    ].join('\n');
    const error = { name: 'OutOfMemoryError', message: 'CUDA out of memory. Tried to allocate 2.00 GiB.', stack };

    it('strips the colours and keeps the traceback that ends with the error line', () => {
        const text = errorText(error);
        assert.equal(text.includes(ESC), false);
        assert.equal(text.trimEnd().split('\n').pop(), 'OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
        assert.equal(text.split('OutOfMemoryError: CUDA').length, 2); // not added twice
    });

    it('adds the error line to a traceback without it, and stands in for a missing traceback', () => {
        assert.equal(errorText({ name: 'KeyError', message: "'model'", stack: 'Traceback (most recent call last):\n  File "x.py", line 1' }).trimEnd().split('\n').pop(), "KeyError: 'model'");
        assert.equal(errorText({ name: 'KeyError', message: "'model'" }), "KeyError: 'model'\n");
    });

    it('joins streams and the error in output order', () => {
        assert.equal(cellOutputText([{ stream: `${ESC}[33m[rank1]: warning${ESC}[0m` }, { error: { name: 'E', message: 'm' } }]), '[rank1]: warning\nE: m\n');
    });

    it('finds the line of the cell that raised', () => {
        assert.equal(failedCellLine(stripAnsi(stack)), 1);
        assert.equal(failedCellLine('Traceback (most recent call last):\n  File "train.py", line 3'), undefined);
    });
});

describe('rank-prefixed traceback frames', () => {
    it('reads torchrun, --tee and srun -l prefixes', () => {
        assert.deepEqual(rankFrame('[rank3]:   File "/x/train.py", line 42, in step'), { start: 0, length: 38, path: '/x/train.py', line: 42, rank: 3 });
        assert.equal(rankFrame('[default0]:  File "train.py", line 7, in <module>')?.rank, 0);
        assert.deepEqual(rankFrame('3:   File "/w/model.py", line 9'), { start: 0, length: 31, path: '/w/model.py', line: 9, rank: 3 });
    });

    it('leaves other lines alone', () => {
        assert.equal(rankFrame('  File "/x/train.py", line 42, in step'), undefined); // no rank: VS Code links it itself
        assert.equal(rankFrame('[rank3]: RuntimeError: NCCL error'), undefined);
        assert.equal(rankFrame('epoch 3: loss 0.12'), undefined);
    });
});

describe('language-model tool inputs', () => {
    const roots = ['/ws'];

    it('maps each tool to its server call, relative paths from the workspace', () => {
        assert.deepEqual(serverCall('trainmedic_diagnose', { paths: ['logs/run.log'] }, roots), { kind: 'diagnosePaths', paths: ['/ws/logs/run.log'] });
        assert.deepEqual(serverCall('trainmedic_diagnose', { text: 'Traceback' }, roots), { kind: 'diagnoseText', text: 'Traceback' });
        assert.deepEqual(serverCall('trainmedic_diagnose', { source: 'terminal' }, roots), { kind: 'diagnoseSource', source: 'terminal' });
        assert.deepEqual(serverCall('trainmedic_check', { paths: ['/abs/train.py'] }, roots), { kind: 'check', paths: ['/abs/train.py'] });
        assert.deepEqual(serverCall('trainmedic_explain', { rule_id: ' amp-loss-scale ' }, roots), { kind: 'explain', ruleId: 'amp-loss-scale' });
    });

    it('refuses inputs the model must change, saying how', () => {
        assert.throws(() => serverCall('trainmedic_diagnose', { text: 'a', paths: ['b'] }, roots), /exactly one of/);
        assert.throws(() => serverCall('trainmedic_diagnose', {}, roots), ToolInputError);
        assert.throws(() => serverCall('trainmedic_check', { paths: [] }, roots), /non-empty list/);
        assert.throws(() => serverCall('trainmedic_explain', { rule: 'x' }, roots), /unknown input "rule"/);
        assert.throws(() => serverCall('trainmedic_diagnose', { source: 'clipboard' }, roots), /"selection" or "terminal"/);
    });

    it('names the files outside the workspace, which need a confirmation', () => {
        const call = serverCall('trainmedic_check', { paths: ['train.py', '/ws/../etc/x.py', '/ws-other/a.py', '/tmp/run.log'] }, roots);
        assert.deepEqual(outsideWorkspace(call, roots), ['/ws/../etc/x.py', '/ws-other/a.py', '/tmp/run.log']);
        assert.deepEqual(outsideWorkspace(serverCall('trainmedic_explain', { rule_id: 'x' }, roots), roots), []);
    });

    it('reads a tool name and its JSON input', () => {
        assert.deepEqual(parseInvocation('trainmedic_explain {"rule_id": "cuda-oom"}'), { tool: 'trainmedic_explain', input: { rule_id: 'cuda-oom' } });
        assert.throws(() => parseInvocation('other_tool {}'), /start with a tool name/);
        assert.throws(() => parseInvocation('trainmedic_check {paths'), /not JSON/);
    });
});

describe('rule scaffold', () => {
    const excerpt = '[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\nnext line';

    it('makes the first line a literal pattern with its numbers generalised', () => {
        const pattern = patternFrom(excerpt);
        assert.equal(pattern, String.raw`torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate \d{1,9}\.\d{1,9} GiB\.`);
        assert.match('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 GiB.', new RegExp(pattern));
    });

    it('puts the selection in examples.match and a placeholder in no_match', () => {
        const yaml = ruleScaffold('nfs-stall', 'site', excerpt, 'selected in run.log');
        assert.ok(yaml.startsWith('id: nfs-stall\n'));
        assert.ok(yaml.includes('\ncategory: site\n'));
        assert.ok(yaml.includes(`  match:\n    - text: ${JSON.stringify(excerpt)}\n      source: "selected in run.log"`));
        assert.ok(yaml.includes('  no_match:\n    - text: "REPLACE: a line that looks alike but is not this failure"'));
        assert.ok(RULE_ID.test('nfs-stall'));
        assert.ok(!RULE_ID.test('NFS stall'));
    });

    it('places a problem on its line, or on its field', () => {
        const yaml = ruleScaffold('a', 'b', 'x', 'y');
        assert.equal(problemLine(yaml, 3, 'category: must match'), 2);
        assert.equal(problemLine(yaml, null, 'examples: match[0] did not fire'), yaml.split('\n').indexOf('examples:'));
    });
});
