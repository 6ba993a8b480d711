import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDiagnoseResult } from '../../src/diagnosis';
import { contentSecurityPolicy, embeddedJson, escapeHtml, renderPanelHtml } from '../../src/panel/html';
import { PanelModel, buildPanelModel } from '../../src/panel/model';

const resources = {
    cspSource: 'https://file+.vscode-resource.vscode-cdn.net',
    nonce: 'bm9uY2Utdmx1ZQ==',
    scriptUri: 'https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview/main.js',
    styleUri: 'https://file+.vscode-resource.vscode-cdn.net/ext/dist/webview/main.css',
};

function model(overrides: { text?: string; fix?: string; series?: unknown } = {}): PanelModel {
    const result = parseDiagnoseResult({
        initiating_rank: 3,
        initiating_reason: 'rank 3 failed first',
        diagnoses: [
            {
                rule_id: 'amp-loss-scale',
                title: 'Mixed precision loss scale',
                role: 'root',
                confidence: 0.9,
                rank: 3,
                evidence: [{ path: 'run.log', line: 2, text: overrides.text ?? '[rank3]: FloatingPointError: Minimum loss scale reached' }],
                fix: overrides.fix ?? 'scaler = torch.amp.GradScaler("cuda")',
                verify: 'trainmedic probe amp',
            },
        ],
        ranks: { '3': { status: 'failed-first', first_failure_line: { path: 'run.log', line: 2 } } },
        markdown: '',
        series: overrides.series ?? {},
    });
    return buildPanelModel(result, 'run.log', (ref) => ({ uri: 'file:///ws/run.log', line: ref.line - 1 }));
}

const trusted = { trusted: true, verifyCommandLine: '/usr/bin/python3 -m trainmedic probe amp' };

describe('panel HTML', () => {
    it('allows only the nonce script and local styles: nothing from the network', () => {
        const csp = contentSecurityPolicy(resources.cspSource, resources.nonce);
        assert.equal(
            csp,
            "default-src 'none'; style-src https://file+.vscode-resource.vscode-cdn.net; img-src https://file+.vscode-resource.vscode-cdn.net data:; " +
                "font-src https://file+.vscode-resource.vscode-cdn.net; script-src 'nonce-bm9uY2Utdmx1ZQ=='",
        );
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:\/\/\*|\bhttps:(?!\/\/file)/);
        const html = renderPanelHtml(model(), resources, trusted);
        assert.ok(html.includes(`<meta http-equiv="Content-Security-Policy" content="${escapeHtml(csp)}">`));
    });

    it('gives every executable script the nonce and uses no inline handlers or styles', () => {
        const html = renderPanelHtml(model({ series: { loss: { rank: 3, points: [[1, 2]], anomalies: [] } } }), resources, trusted);
        const scripts = [...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1] ?? '');
        assert.equal(scripts.length, 2);
        assert.ok(scripts.some((attrs) => attrs.includes(`nonce="${resources.nonce}"`) && attrs.includes(resources.scriptUri)));
        assert.ok(scripts.some((attrs) => attrs.includes('type="application/json"')));
        assert.doesNotMatch(html, /\son[a-z]+=/i);
        assert.doesNotMatch(html, /\sstyle=/i);
        assert.doesNotMatch(html, /<style/i);
    });

    it('escapes log text, which is the user’s data and may hold markup', () => {
        const html = renderPanelHtml(model({ text: '<img src=x onerror="alert(1)"> & </script>' }), resources, trusted);
        assert.ok(html.includes('&lt;img src=x onerror=&quot;alert(1)&quot;&gt; &amp; &lt;/script&gt;'));
        assert.doesNotMatch(html, /<img/);
    });

    it('keeps embedded chart data from closing its script element', () => {
        assert.equal(embeddedJson({ a: '</script><b>' }), '{"a":"\\u003c/script\\u003e\\u003cb\\u003e"}');
    });

    it('shows the initiating rank’s host and its basis in words', () => {
        const answer = (basis: string, host: string | null) => renderPanelHtml(buildPanelModel(parseDiagnoseResult({
            initiating_rank: 3,
            initiating_basis: basis,
            initiating_host: host,
            initiating_reason: 'rank 3 is the only rank in this input (amp-loss-scale, run.log:2)',
            diagnoses: [{ rule_id: 'amp-loss-scale', title: 'Mixed precision loss scale', role: 'root', confidence: 0.9, rank: 3, evidence: [{ path: 'run.log', line: 2, text: 'x' }], fix: 'f', verify: 'v' }],
            ranks: { '3': { status: 'failed', first_failure_line: { path: 'run.log', line: 2 } } },
        }), 'run.log', () => undefined), resources, trusted);
        const exited = answer('exited-by-itself', 'node-3');
        assert.match(exited, /<p class="rank-value">rank 3 on host node-3<\/p>/);
        assert.match(exited, /<p class="basis">The launcher saw it end by itself and then stopped the others\.<\/p>/);
        const only = answer('only-rank-in-input', null);
        assert.match(only, /<p class="rank-value">rank 3<\/p>/);
        assert.match(only, /<p class="basis">The only rank in this input/);
        assert.doesNotMatch(only, /failed first/i);
    });

    it('shows the initiating rank, why, the fix and the verification command', () => {
        const html = renderPanelHtml(model(), resources, trusted);
        assert.match(
            html,
            /<h2 id="h-rank">Initiating rank<\/h2>\s*<p class="rank-value">rank 3<\/p><p class="why">Rank 3 failed first\. First failure: <a href="#" class="line-ref" data-action="reveal" data-place="0" title="Go to this line">run\.log:2<\/a>\.<\/p>/,
        );
        assert.ok(html.includes('scaler = torch.amp.GradScaler(&quot;cuda&quot;)'));
        assert.ok(html.includes('<code>trainmedic probe amp</code>'));
        assert.match(html, /data-action="reveal" data-place="0"/);
    });

    it('enables Run in terminal only in a trusted workspace', () => {
        const yes = renderPanelHtml(model(), resources, trusted);
        assert.match(yes, /<button type="button" data-action="runVerification" title="Types \/usr\/bin\/python3 -m trainmedic probe amp into a terminal">/);
        const no = renderPanelHtml(model(), resources, { trusted: false, verifyCommandLine: undefined });
        assert.match(no, /data-action="runVerification" title="Verification commands are disabled in an untrusted workspace" disabled>/);
        assert.match(no, /Trust this workspace to run verification commands/);
    });

    it('shows an undetermined rank as plain text, not as an alarm', () => {
        const result = parseDiagnoseResult({ initiating_rank: null, diagnoses: [{ rule_id: 'x', title: 'X', role: 'root', confidence: 1, rank: null, evidence: [], fix: '', verify: '' }] });
        const html = renderPanelHtml(buildPanelModel(result, 'x', () => undefined), resources, trusted);
        assert.match(html, /<p class="rank-value undetermined">not determined<\/p>/);
    });

    it('offers the other ranks of a chart', () => {
        const series = { loss: { rank: 3, points: [[1, 2]], anomalies: [], other_ranks: { '0': [[1, 2.5]], '1': [[1, 2.4]] } } };
        const html = renderPanelHtml(model({ series }), resources, trusted);
        assert.match(html, /<select class="chart-rank" data-chart-rank="0" aria-label="Rank shown in the loss chart"><option value="0" selected>rank 3<\/option><option value="1">rank 0<\/option><option value="2">rank 1<\/option><\/select>/);
    });

    it('renders charts only when the diagnosis has series', () => {
        assert.doesNotMatch(renderPanelHtml(model(), resources, trusted), /tm-charts/);
        const html = renderPanelHtml(model({ series: { loss_scale: { rank: 3, points: [[1, 2]], anomalies: [] } } }), resources, trusted);
        assert.match(html, /<figcaption>Loss scale <span class="ev-meta">rank 3<\/span><\/figcaption><div class="chart-body" data-chart="0">/);
    });
});
