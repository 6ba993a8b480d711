/* global document, navigator, window -- used inside callbacks that run in the page */
// Drives a real VS Code (code-server, with the TrainMedic VSIX installed) through its UI with
// headless Chromium, as a user would: open a multi-rank log and read the root cause in the
// Problems panel; select a traceback, run Diagnose Selection and read the results panel; open a
// training script, hover its warning and apply the quick fix; and the rest of the commands. A
// screenshot per step goes to ARTIFACTS. Run by scripts/e2e.sh, which sets CS_URL, WORKSPACE,
// ARTIFACTS, PROFILE, CHROMIUM and, to refresh the README's picture, README_SHOT.
// Prints one "N passed, N failed" line; exits non-zero when a step fails.
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const env = (name) => {
    const value = process.env[name];
    if (!value) {
        throw new Error(`${name} is not set (run scripts/e2e.sh)`);
    }
    return value;
};
const BASE = env('CS_URL');
const WORKSPACE = env('WORKSPACE');
const ARTIFACTS = env('ARTIFACTS');
const PROFILE = env('PROFILE');
const CHROMIUM = env('CHROMIUM');
const README_SHOT = process.env.README_SHOT;

const LOG = 'torchrun-amp.log';
const LOG_DIR = 'torchrun-logdir'; // copied from tests/fixtures by scripts/e2e.sh
const SCRIPT = 'train.py';
const PER_RANK = 'per-rank-files'; // rank0.log … rank3.log without [rankN] prefixes, and launcher.log
const HANG = 'torchrun-hang.log'; // rank 3 sleeps in a collective, ranks 0-2 time out
const BIG = 'big-run.log'; // written by the test: over VS Code's 50 MB sync limit
const METRICS = 'megatron-metrics.log'; // a constant loss scale, a grad norm within a decade, a NaN loss
const CLIP = 'clip_scaled.py'; // clips scaled gradients, unscales after the clip
const TRACEBACK = { first: 38, last: 45 }; // rank 0's traceback in the log, 1-based lines
// The root cause's first evidence: rank 0's loss scale has halved five times, to 128 (step 9).
const ROOT_CAUSE_LINE = 16;

mkdirSync(ARTIFACTS, { recursive: true });

// A long healthy two-rank run that ends in the failure of LOG, over VS Code's 50 MB limit for
// extensions; written before the workspace opens, so Quick Open knows it.
const BIG_BODY = readFileSync(join(WORKSPACE, 'healthy-2ranks.log'), 'utf8');
const BIG_REPEATS = Math.ceil(60_000_000 / BIG_BODY.length);
writeFileSync(join(WORKSPACE, BIG), BIG_BODY.repeat(BIG_REPEATS) + readFileSync(join(WORKSPACE, LOG), 'utf8'));
const BIG_ROOT_LINE = (BIG_BODY.split('\n').length - 1) * BIG_REPEATS + ROOT_CAUSE_LINE;
rmSync(PROFILE, { recursive: true, force: true });

const context = await chromium.launchPersistentContext(PROFILE, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
// Diagnose Terminal Selection reads the terminal's selection through the clipboard.
await context.grantPermissions(['clipboard-read', 'clipboard-write']);
const page = context.pages()[0] ?? (await context.newPage());
page.setDefaultTimeout(30_000);

const shot = async (name) => {
    const path = join(ARTIFACTS, `${name}.png`);
    await page.screenshot({ path });
    return path;
};

/** Opens the quick input with `chord`, retrying: keybindings can lag the first paint. */
async function quickInput(chord) {
    const input = page.locator('.quick-input-widget input');
    for (let i = 0; i < 3; i++) {
        await page.keyboard.press(chord);
        try {
            await input.waitFor({ state: 'visible', timeout: 5000 });
            return input;
        } catch {
            await page.keyboard.press('Escape');
        }
    }
    throw new Error(`the quick input did not open with ${chord}`);
}

async function pick(chord, text, row) {
    const input = await quickInput(chord);
    await input.fill(text);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: row }).first().click();
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

const runCommand = (title) => pick('Control+Shift+P', `>${title}`, title);

async function openFile(name) {
    await pick('Control+P', name, name);
    const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    await page.locator('.tab.active', { hasText: name }).waitFor();
    await editor.locator('.view-lines').waitFor();
    return editor;
}

async function goToLine(line) {
    const input = await quickInput('Control+G');
    await input.fill(`:${line}`);
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
    await page.locator('.statusbar-item', { hasText: `Ln ${line},` }).first().waitFor();
}

/** The results panel's document: a webview is an iframe holding the active frame. */
const resultsPanel = () => page.frameLocator('iframe.webview.ready').last().frameLocator('#active-frame');

/** Diagnoses the whole active editor, as the keybinding does with nothing selected. */
async function diagnoseActiveEditor(editor) {
    await editor.locator('.view-lines').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('Control+Alt+D');
}

/** Per chart of the results panel: how many pixels of the canvas have its line's colour. */
async function chartPixels(panel) {
    return panel.locator('.chart-body').evaluateAll((boxes) =>
        boxes.map((box) => {
            const canvas = box.querySelector('canvas');
            const context = canvas?.getContext('2d');
            if (!canvas || !context || !box.dataset.stroke) {
                return 0;
            }
            const probe = document.createElement('canvas').getContext('2d');
            probe.fillStyle = box.dataset.stroke;
            probe.fillRect(0, 0, 1, 1);
            const [r, g, b] = probe.getImageData(0, 0, 1, 1).data;
            const { data } = context.getImageData(0, 0, canvas.width, canvas.height);
            let count = 0;
            for (let i = 0; i < data.length; i += 4) {
                if (data[i + 3] > 128 && Math.abs(data[i] - r) + Math.abs(data[i + 1] - g) + Math.abs(data[i + 2] - b) < 60) {
                    count += 1;
                }
            }
            return count;
        }),
    );
}

/** The Problems panel's rows, as text. */
async function problems() {
    const panel = page.locator('.markers-panel').first();
    if (!(await panel.isVisible())) {
        await page.keyboard.press('Control+Shift+M'); // toggles: only when it is not shown
        await panel.waitFor({ state: 'visible' });
    }
    return (await page.locator('.markers-panel .monaco-list-row').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
}

const steps = [];
const step = (name, run) => steps.push({ name, run });

step('a multi-rank log shows its root cause in the Problems panel', async () => {
    await page.goto(`${BASE}/?folder=${encodeURIComponent(WORKSPACE)}`);
    await page.locator('.monaco-workbench .part.statusbar').waitFor({ state: 'visible' });
    await page.locator('.monaco-workbench').click({ position: { x: 700, y: 400 } }).catch(() => undefined);
    const editor = await openFile(LOG);
    await page.keyboard.press('Control+Shift+M');
    const row = page.locator('.markers-panel .monaco-list-row', { hasText: 'Root cause on rank 0' }).first();
    await row.waitFor({ state: 'visible', timeout: 60_000 });
    const text = await row.innerText();
    if (!/Mixed precision loss scale/.test(text) || !/amp-loss-scale/.test(text)) {
        throw new Error(`unexpected Problems row: ${text}`);
    }
    // Opening the problem reveals the root-cause line and its error squiggle.
    await row.click();
    await page.keyboard.press('Enter');
    await page.locator('.statusbar-item', { hasText: `Ln ${ROOT_CAUSE_LINE},` }).first().waitFor({ state: 'visible' });
    await editor.locator('.squiggly-error').first().waitFor({ state: 'attached' });
    await shot('01-problems-root-cause');
});

step('Diagnose Selection on a traceback shows the initiating rank and the fix', async () => {
    const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    await editor.locator('.view-lines').click();
    await goToLine(TRACEBACK.first);
    await page.keyboard.press('Home');
    for (let i = TRACEBACK.first; i < TRACEBACK.last; i++) {
        await page.keyboard.press('Shift+ArrowDown');
    }
    await page.keyboard.press('Shift+End');
    await editor.locator('.selected-text').first().waitFor({ state: 'attached' });
    await shot('02-traceback-selected');
    await runCommand('TrainMedic: Diagnose Selection');
    const panel = resultsPanel();
    await panel.locator('h1', { hasText: 'Mixed precision loss scale' }).waitFor({ timeout: 60_000 });
    const rank = (await panel.locator('.rank-value').innerText()).trim();
    if (rank !== 'rank 0') {
        throw new Error(`initiating rank shown: ${rank}`);
    }
    // the selection holds rank 0's traceback only: it is not said to have failed first
    const why = await panel.locator('.why').innerText();
    const basis = await panel.locator('.basis').innerText();
    if (!/only rank in this input/i.test(why) || !/only rank in this input/i.test(basis) || /failed first/i.test(why + basis)) {
        throw new Error(`why: ${why} basis: ${basis}`);
    }
    const fix = await panel.locator('pre.fix').innerText();
    if (!fix.includes('torch.amp.GradScaler("cuda")')) {
        throw new Error(`fix: ${fix}`);
    }
    const verify = await panel.locator('pre.verify').innerText();
    if (verify.trim() !== 'trainmedic probe amp') {
        throw new Error(`verification command: ${verify}`);
    }
    if (await panel.locator('button[data-action="runVerification"]').isDisabled()) {
        throw new Error('Run in terminal is disabled in a trusted workspace');
    }
    const status = page.locator('.statusbar-item', { hasText: 'amp-loss-scale · rank 0' });
    await status.first().waitFor({ state: 'visible' });
    await shot('03-results-panel-selection');
});

step('with nothing selected, the keybinding diagnoses the whole log: every rank, and the loss chart', async () => {
    // The log beside the results, and nothing else: no side bar, no bottom panel.
    await runCommand('View: Hide Panel');
    await runCommand('View: Close Primary Side Bar');
    await page.keyboard.press('Home'); // drops the selection, back to column 1
    await page.keyboard.press('Control+Alt+D');
    const panel = resultsPanel();
    await panel.locator('.meta', { hasText: /· torchrun-amp\.log$/ }).waitFor();
    const ranks = await panel.locator('table.ranks tbody tr').allInnerTexts();
    const rows = ranks.map((r) => r.replace(/\s+/g, ' ').trim());
    if (rows.length !== 3 || !rows[0]?.startsWith('0 failed first') || !rows.slice(1).every((r) => / killed /.test(`${r} `))) {
        throw new Error(`ranks table: ${JSON.stringify(rows)}`);
    }
    await panel.locator('.chart-body canvas').first().waitFor({ state: 'attached' });
    await page.mouse.move(300, 160); // no tooltip over the picture
    await page.waitForTimeout(600);
    const path = await shot('04-results-panel-whole-log');
    if (README_SHOT) {
        copyFileSync(path, README_SHOT);
    }
    await panel.locator('#h-metrics').scrollIntoViewIfNeeded();
    await shot('05-results-panel-metrics');
});

step('an evidence line in the results panel jumps to its place in the log', async () => {
    await resultsPanel().locator('ul.evidence a.line-ref').first().click();
    await page.locator('.statusbar-item', { hasText: `Ln ${ROOT_CAUSE_LINE}, Col 1` }).first().waitFor({ state: 'visible' });
    await shot('06-evidence-jump');
});

step('Run in terminal types the verification command into a terminal, on that click only', async () => {
    await resultsPanel().locator('button[data-action="runVerification"]').click();
    // The DOM renderer (gpuAcceleration off) puts the terminal's text in the page.
    await page.locator('.xterm-rows', { hasText: '-m trainmedic probe amp' }).first().waitFor();
    await page.locator('.terminal-tab, .single-terminal-tab', { hasText: 'TrainMedic: verify' }).first().waitFor({ state: 'attached' });
    await shot('07-verification-in-terminal');
});

step('a failed terminal command whose output matches a root cause offers its diagnosis', async () => {
    // A terminal of its own, used once its shell (and its shell integration) is up.
    await runCommand('Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper.active .xterm-rows', { hasText: '# ' }).waitFor();
    // Shell integration marks each prompt with a decoration once it is active.
    await page.locator('.terminal-wrapper.active .terminal-command-decoration').first().waitFor({ state: 'attached' });
    // Like a training run, it prints a moment after it starts: VS Code hands an extension only
    // the output written after the command started (output of an instant command can race it).
    await page.keyboard.type(`sleep 1; cat ${LOG} && false`);
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: 'failed: Mixed precision loss scale' }).first();
    await toast.waitFor({ state: 'visible', timeout: 60_000 });
    await page.waitForTimeout(500); // the toast slides in
    await shot('08-failed-command-notification');
    await toast.locator('.monaco-button', { hasText: 'Show diagnosis' }).click();
    await resultsPanel().locator('.meta', { hasText: `the output of “sleep 1; cat ${LOG} && false”, exit code 1` }).waitFor();
    if ((await resultsPanel().locator('.rank-value').innerText()).trim() !== 'rank 0') {
        throw new Error('the failed command’s diagnosis does not name rank 0');
    }
});

step('Diagnose Terminal Selection diagnoses what is selected in the terminal', async () => {
    await page.locator('.terminal-wrapper.active .xterm').first().click();
    await runCommand('Terminal: Select All');
    await runCommand('TrainMedic: Diagnose Terminal Selection');
    await resultsPanel().locator('.meta', { hasText: 'a selection in terminal “' }).waitFor();
    if ((await resultsPanel().locator('.rank-value').innerText()).trim() !== 'rank 0') {
        throw new Error('the terminal selection’s diagnosis does not name rank 0');
    }
    // The last command's output, asked for from the palette.
    await runCommand('TrainMedic: Diagnose Last Command Output');
    await resultsPanel().locator('.meta', { hasText: `the output of “sleep 1; cat ${LOG} && false”, exit code 1` }).waitFor();
    await shot('09-terminal-selection-diagnosed');
    await runCommand('View: Hide Panel');
    await runCommand('View: Single Column Editor Layout');
});

/** The Explorer, shown by a click on its activity-bar icon: a keybinding, even the command
 * palette's, may go to a webview that took the focus. */
async function showExplorer() {
    const rows = page.locator('.explorer-folders-view .monaco-list-row');
    for (let i = 0; i < 3 && !(await rows.first().isVisible()); i++) {
        await page.locator('.activitybar .action-label[aria-label^="Explorer"]').first().click();
        await rows.first().waitFor({ state: 'visible', timeout: 5000 }).catch(() => {});
    }
    await rows.first().waitFor();
}

/** Diagnose Log Folder… from the Explorer's context menu on `name`; the results panel once it shows them. */
async function diagnoseLogFolder(name) {
    await showExplorer();
    const folder = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first();
    await folder.click({ button: 'right' });
    const item = page.locator('.context-view .monaco-menu .action-item', { hasText: 'Diagnose Log Folder' }).first();
    await item.hover();
    await page.keyboard.press('Enter');
    const panel = resultsPanel();
    await panel.locator('.meta', { hasText: `the logs in ${name}` }).waitFor({ timeout: 60_000 });
    return panel;
}

step('Diagnose Log Folder… in the Explorer reads a torchrun --log-dir as one run', async () => {
    const panel = await diagnoseLogFolder(LOG_DIR);
    const rank = (await panel.locator('.rank-value').innerText()).trim();
    if (rank !== 'rank 1') {
        throw new Error(`initiating rank of the log folder: ${rank}`);
    }
    await shot('10-log-folder-diagnosed');
    // Evidence lines open in the file they came from.
    const first = panel.locator('ul.evidence li.root a.line-ref').first();
    const label = (await first.innerText()).trim();
    await first.click();
    const [name, line] = label.split(':');
    await page.locator('.tab.active', { hasText: name }).waitFor();
    await page.locator('.statusbar-item', { hasText: `Ln ${line}, Col 1` }).first().waitFor();
    await runCommand('View: Single Column Editor Layout');
    await runCommand('View: Close Primary Side Bar');
});

step('Show Catalogue Entry… opens an entry of the catalogue', async () => {
    const input = await quickInput('Control+Shift+P');
    await input.fill('>TrainMedic: Show Catalogue Entry');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'TrainMedic: Show Catalogue Entry' }).first().click();
    await page.locator('.quick-input-widget input[placeholder="Type a failure, a symptom or a rule id"]').waitFor();
    await input.fill('amp-bf16-vs-fp16');
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: 'amp-bf16-vs-fp16' }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tab', { hasText: 'amp-bf16-vs-fp16' }).first().waitFor();
    await shot('11-catalogue-entry');
});

step('a training script shows the GradScaler warning, its hover and a quick fix that edits the file', async () => {
    const editor = await openFile(SCRIPT);
    const squiggle = editor.locator('.squiggly-warning').first();
    await squiggle.waitFor({ state: 'attached', timeout: 60_000 });
    await squiggle.hover({ force: true });
    const hover = page.locator('.monaco-hover', { hasText: 'TM101' }).first();
    await hover.waitFor({ state: 'visible' });
    await shot('12-script-hover');
    await page.keyboard.press('Escape');
    // Put the cursor on the warning the way a keyboard user does (Go to Next Problem), rather
    // than clicking its squiggle, which the editor may be re-rendering after the hover.
    await page.keyboard.press('F8');
    await page.locator('.marker-widget, .zone-widget').first().waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+.');
    const menu = page.locator('.action-widget:not(.action-list-submenu-panel)');
    await menu.waitFor({ state: 'visible' });
    await shot('13-quick-fix-menu');
    const fix = menu.locator('.monaco-list-row', { hasText: 'Fix TM101' }).first();
    await fix.click();
    await editor.locator('.view-lines', { hasText: 'torch.amp.GradScaler("cuda")' }).waitFor();
    await page.keyboard.press('Control+S');
    let saved = '';
    for (let i = 0; i < 100 && !saved.includes('torch.amp.GradScaler("cuda")'); i++) {
        await page.waitForTimeout(100);
        saved = readFileSync(join(WORKSPACE, SCRIPT), 'utf8');
    }
    if (!saved.includes('torch.amp.GradScaler("cuda")') || saved.includes('torch.cuda.amp.GradScaler')) {
        throw new Error(`train.py on disk after the quick fix and a save:\n${saved}`);
    }
    // The server checks the fixed script again: the warning goes away.
    await editor.locator('.squiggly-warning').waitFor({ state: 'detached', timeout: 15_000 });
    await shot('14-quick-fix-applied');
});

step('the results panel follows a high-contrast theme', async () => {
    const input = await quickInput('Control+Shift+P');
    await input.fill('>Preferences: Color Theme');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: /^Preferences: Color Theme/ }).first().click();
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Dark Modern' }).first().waitFor();
    await input.fill('Dark High Contrast');
    await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Dark High Contrast' }).first().click();
    await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
    await page.locator('.tab', { hasText: 'TrainMedic: ' }).first().click();
    const panel = resultsPanel();
    await panel.locator('body.vscode-high-contrast h1').waitFor();
    await panel.locator('.chart-body canvas').first().waitFor({ state: 'attached' });
    await page.waitForTimeout(300);
    await shot('15-results-panel-high-contrast');
});

step('Diagnose Log Folder… on per-rank files without prefixes gets every rank from the file names', async () => {
    // The last result scrolled down: the next one must start at its top.
    await resultsPanel().locator('section').last().scrollIntoViewIfNeeded();
    await runCommand('View: Close All Editors');
    // A 1280 px window with the Explorer open: the panel is narrow.
    await page.setViewportSize({ width: 1280, height: 800 });
    const panel = await diagnoseLogFolder(PER_RANK);
    const rank = (await panel.locator('.rank-value').innerText()).trim();
    if (rank !== 'rank 1') {
        throw new Error(`initiating rank of the per-rank files: ${rank}`);
    }
    const layout = await panel.locator('main').evaluate((main) => {
        const fix = main.querySelector('pre.fix');
        return {
            scrolled: window.scrollY,
            fixOverflow: fix ? fix.scrollWidth - fix.clientWidth : -1,
            narrowest: Math.min(...[...main.querySelectorAll('.ev-text')].map((e) => e.getBoundingClientRect().width)),
        };
    });
    if (layout.scrolled !== 0 || layout.fixOverflow > 1 || layout.narrowest < 150) {
        throw new Error(`the panel at 1280 px: ${JSON.stringify(layout)}`);
    }
    const rows = (await panel.locator('table.ranks tbody tr').allInnerTexts()).map((r) => r.replace(/\s+/g, ' ').trim());
    const expected = ['1 failed first rank1.log:22', '0 collateral rank0.log:17', '2 collateral rank2.log:17', '3 killed —'];
    if (rows.length !== 4 || !expected.every((start, i) => rows[i]?.startsWith(start))) {
        throw new Error(`ranks table: ${JSON.stringify(rows)}`);
    }
    // The loss chart shows the failing rank and offers the others.
    const picker = panel.locator('select.chart-rank').first();
    const options = (await picker.locator('option').allTextContents()).map((o) => o.trim());
    if (options.join(',') !== 'rank 1,rank 0,rank 2,rank 3') {
        throw new Error(`ranks offered by the loss chart: ${options.join(', ')}`);
    }
    await picker.selectOption({ label: 'rank 3' });
    await panel.locator('.chart-body canvas').first().waitFor({ state: 'attached' });
    const drawn = await chartPixels(panel);
    if (!(drawn[0] > 20)) {
        throw new Error(`rank 3's loss chart drew ${drawn[0]} pixels of its line`);
    }
    await shot('16-per-rank-files-diagnosed');
    const first = panel.locator('ul.evidence li.root a.line-ref').first();
    if ((await first.innerText()).trim() !== 'rank1.log:22') {
        throw new Error(`first evidence: ${await first.innerText()}`);
    }
    await first.click();
    await page.locator('.tab.active', { hasText: 'rank1.log' }).waitFor();
    await page.locator('.statusbar-item', { hasText: 'Ln 22, Col 1' }).first().waitFor();
    await runCommand('View: Close Primary Side Bar');
    await page.setViewportSize({ width: 1400, height: 900 });
});

step('a 60 MB log, opened anyway, is diagnosed: Problems, the keybinding and its evidence links', async () => {
    await runCommand('View: Close All Editors');
    await pick('Control+P', BIG, BIG);
    await page.locator('.tab.active', { hasText: BIG }).waitFor();
    // VS Code may first ask whether to open a file this large.
    const anyway = page.locator('.editor-group-container.active').getByText('Open Anyway').first();
    await anyway.click({ timeout: 5000 }).catch(() => undefined);
    const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    await editor.locator('.view-lines').waitFor({ timeout: 60_000 });
    await shot('17-big-log-opened');
    let rows = [];
    for (let i = 0; i < 120 && !rows.some((r) => r.includes('Root cause on rank 0')); i++) {
        await page.waitForTimeout(500);
        rows = await problems();
    }
    if (!rows.some((r) => r.includes(BIG)) || !rows.some((r) => r.includes('Root cause on rank 0: Mixed precision loss scale'))) {
        throw new Error(`Problems for the big log: ${JSON.stringify(rows.slice(0, 6))}`);
    }
    await shot('18-big-log-problems');
    await runCommand('View: Hide Panel');
    await diagnoseActiveEditor(editor);
    const panel = resultsPanel();
    await panel.locator('.meta', { hasText: `· ${BIG}` }).waitFor({ timeout: 120_000 });
    if ((await panel.locator('.rank-value').innerText()).trim() !== 'rank 0') {
        throw new Error('the big log’s diagnosis does not name rank 0');
    }
    const first = panel.locator('ul.evidence li.root a.line-ref').first();
    const label = (await first.innerText()).trim();
    if (label !== `${BIG}:${BIG_ROOT_LINE}`) {
        throw new Error(`first evidence of the big log: ${label}, not ${BIG}:${BIG_ROOT_LINE}`);
    }
    await first.click();
    await page.locator('.statusbar-item', { hasText: `Ln ${BIG_ROOT_LINE}, Col 1` }).first().waitFor();
    await shot('19-big-log-evidence');
});

step('a hang log names the rank it waited for in Problems and in the panel', async () => {
    await runCommand('View: Close All Editors');
    const editor = await openFile(HANG);
    let rows = [];
    for (let i = 0; i < 60 && !rows.some((r) => r.includes('Root cause on rank 3')); i++) {
        await page.waitForTimeout(500);
        rows = await problems();
    }
    if (!rows.some((r) => r.includes('Root cause on rank 3: A rank stopped entering collectives') && r.includes('collective-hang'))) {
        throw new Error(`Problems for the hang log: ${JSON.stringify(rows.slice(0, 6))}`);
    }
    await shot('20-hang-problems');
    // The rule's code opens its entry from the bundled catalogue (no web page).
    const row = page.locator('.markers-panel .monaco-list-row', { hasText: 'Root cause on rank 3' }).first();
    await row.locator('a, .monaco-link', { hasText: 'collective-hang' }).first().click();
    await page.locator('.tab.active', { hasText: 'collective-hang' }).waitFor();
    await runCommand('View: Close Editor');
    await page.locator('.tab.active', { hasText: HANG }).waitFor();
    await runCommand('View: Hide Panel');
    await diagnoseActiveEditor(editor);
    const panel = resultsPanel();
    await panel.locator('.meta', { hasText: `· ${HANG}` }).waitFor({ timeout: 60_000 });
    if ((await panel.locator('.rank-value').innerText()).trim() !== 'rank 3') {
        throw new Error('the hang log’s panel does not name rank 3');
    }
    const evidence = (await panel.locator('ul.evidence li').allInnerTexts()).map((r) => r.replace(/\s+/g, ' '));
    const prefixed = evidence.filter((r) => /\[rank(\d+)\]:/.test(r));
    const wrong = prefixed.filter((r) => !new RegExp(`· rank ${/\[rank(\d+)\]:/.exec(r)?.[1]}(?!\\d)`).test(r));
    if (prefixed.length < 3 || wrong.length > 0) {
        throw new Error(`evidence rows whose rank is not the line's: ${JSON.stringify(wrong.length ? wrong : evidence)}`);
    }
    await shot('21-hang-panel');
});

step('every chart draws its line: a constant, a series within one decade on a log axis, a NaN', async () => {
    await runCommand('View: Close All Editors');
    const editor = await openFile(METRICS);
    await diagnoseActiveEditor(editor);
    const panel = resultsPanel();
    await panel.locator('.meta', { hasText: METRICS }).waitFor({ timeout: 60_000 });
    const titles = await panel.locator('figure.chart figcaption').allInnerTexts();
    if (titles.length !== 4) {
        throw new Error(`charts shown: ${JSON.stringify(titles)}`);
    }
    await panel.locator('#h-metrics').scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    const drawn = await chartPixels(panel);
    if (!drawn.every((n) => n > 20)) {
        throw new Error(`pixels of each chart's line: ${JSON.stringify(titles.map((t, i) => [t.trim(), drawn[i]]))}`);
    }
    await shot('22-every-chart-drawn');
});

step('the TM105 quick fix leaves exactly one unscale_, before the clip', async () => {
    await runCommand('View: Close All Editors');
    const editor = await openFile(CLIP);
    await editor.locator('.squiggly-warning').first().waitFor({ state: 'attached', timeout: 60_000 });
    await editor.locator('.view-lines').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('F8');
    await page.locator('.marker-widget, .zone-widget').first().waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+.');
    const menu = page.locator('.action-widget:not(.action-list-submenu-panel)');
    await menu.waitFor({ state: 'visible' });
    await menu.locator('.monaco-list-row', { hasText: 'Fix TM105' }).first().click();
    await page.keyboard.press('Control+S');
    let saved = '';
    for (let i = 0; i < 100; i++) {
        await page.waitForTimeout(100);
        saved = readFileSync(join(WORKSPACE, CLIP), 'utf8');
        if (saved.indexOf('unscale_') < saved.indexOf('clip_grad_norm_')) {
            break;
        }
    }
    const unscales = saved.split('\n').filter((l) => l.includes('scaler.unscale_(')).length;
    if (unscales !== 1 || saved.indexOf('scaler.unscale_(') > saved.indexOf('clip_grad_norm_(')) {
        throw new Error(`${CLIP} after the quick fix:\n${saved}`);
    }
    await editor.locator('.squiggly-warning').waitFor({ state: 'detached', timeout: 15_000 });
    await shot('23-tm105-fixed');
});

step('a failing command that prints and exits at once is still offered its diagnosis', async () => {
    await runCommand('View: Close All Editors');
    await runCommand('Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper.active .terminal-command-decoration').first().waitFor({ state: 'attached' });
    const command = `cat ${LOG}; false`;
    await page.keyboard.type(command);
    await page.keyboard.press('Enter');
    const toast = page.locator('.notifications-toasts .notification-list-item', { hasText: `“${command}” failed: Mixed precision loss scale` }).first();
    await toast.waitFor({ state: 'visible', timeout: 60_000 });
    await page.waitForTimeout(500);
    await shot('24-instant-command-notified');
    await toast.locator('.monaco-button', { hasText: 'Show diagnosis' }).click();
    await resultsPanel().locator('.meta', { hasText: `the output of “${command}”, exit code 1` }).waitFor();
    await runCommand('View: Hide Panel');
});

step('the diagnostics of an untitled editor go when it is closed without saving', async () => {
    await runCommand('View: Close All Editors');
    await runCommand('File: New Untitled Text File');
    const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    await editor.locator('.view-lines').click();
    const text = readFileSync(join(WORKSPACE, LOG), 'utf8');
    await page.evaluate((t) => navigator.clipboard.writeText(t), text);
    await page.keyboard.press('Control+V');
    await page.locator('.statusbar-item', { hasText: `Ln ${text.split('\n').length}, Col 1` }).first().waitFor();
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('Control+Alt+D');
    await resultsPanel().locator('.meta', { hasText: 'Untitled-' }).waitFor({ timeout: 60_000 });
    let rows = [];
    for (let i = 0; i < 40 && !rows.some((r) => r.includes('Root cause on rank 0')); i++) {
        await page.waitForTimeout(250);
        rows = await problems();
    }
    if (!rows.some((r) => r.includes('Untitled-')) || !rows.some((r) => r.includes('Root cause on rank 0'))) {
        throw new Error(`Problems for the untitled editor: ${JSON.stringify(rows.slice(0, 6))}`);
    }
    await shot('25-untitled-diagnosed');
    await page.locator('.tab', { hasText: 'Untitled-' }).first().click();
    await page.keyboard.press('Control+W');
    await page.locator('.monaco-dialog-box .monaco-button', { hasText: /Don.t Save/ }).first().click();
    await page.locator('.tab', { hasText: 'Untitled-' }).waitFor({ state: 'detached' });
    for (let i = 0; i < 40 && rows.some((r) => r.includes('Untitled-')); i++) {
        await page.waitForTimeout(250);
        rows = await problems();
    }
    if (rows.some((r) => r.includes('Untitled-'))) {
        throw new Error(`Problems after closing the untitled editor: ${JSON.stringify(rows.slice(0, 6))}`);
    }
    await shot('26-untitled-closed');
});

// --- Notebooks, terminal links and language-model tools ------------------------------------------

const NOTEBOOK = 'finetune.ipynb'; // copied from tests/fixtures/notebooks by scripts/e2e.sh
/** The frame of the webview that shows `text` in `selector`: other webviews (a Markdown preview) may be open. */
async function webviewWith(selector, text, timeout = 60_000) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
        for (const frame of page.frames()) {
            if ((await frame.locator(selector, { hasText: text }).count().catch(() => 0)) > 0) {
                return frame;
            }
        }
        await page.waitForTimeout(250);
    }
    throw new Error(`no webview shows ${selector} “${text}”`);
}

/** The editor of the notebook cell whose text holds `text`. */
const cellEditor = (text) => page.locator('.notebook-editor .cell-editor-container .monaco-editor', { hasText: text }).first();

step('a notebook’s risky cell shows its warning, its hover and a quick fix that edits the cell', async () => {
    await runCommand('View: Single Column Editor Layout');
    await runCommand('View: Hide Panel'); // an earlier step's Problems would cover the cell
    await pick('Control+P', NOTEBOOK, NOTEBOOK);
    await page.locator('.tab.active', { hasText: NOTEBOOK }).waitFor();
    const cell = cellEditor('scaler.step(optimizer)');
    await cell.waitFor();
    await cell.scrollIntoViewIfNeeded();
    const squiggle = cell.locator('.squiggly-warning').first();
    await squiggle.waitFor({ state: 'attached', timeout: 60_000 });
    // The cell may still be laying out when the mouse first arrives: move away and back.
    const hover = page.locator('.monaco-hover', { hasText: 'TM104' }).first();
    for (let attempt = 0; ; attempt++) {
        await page.mouse.move(5, 5);
        await squiggle.hover({ force: true });
        try {
            await hover.waitFor({ state: 'visible', timeout: 8000 });
            break;
        } catch (error) {
            if (attempt === 2) {
                throw error;
            }
        }
    }
    await shot('27-notebook-cell-hover');
    await page.keyboard.press('Escape');
    // The cursor on the warning (Escape would leave the cell's editor), the mouse out of the
    // way (its hover would come back), then the quick fix menu, again if the editor was busy.
    const menu = page.locator('.action-widget:not(.action-list-submenu-panel)');
    for (let attempt = 0; ; attempt++) {
        await squiggle.click({ force: true });
        await page.mouse.move(5, 5);
        await page.keyboard.press('Control+.');
        try {
            await menu.waitFor({ state: 'visible', timeout: 8000 });
            break;
        } catch (error) {
            if (attempt === 2) {
                throw error;
            }
        }
    }
    await menu.locator('.monaco-list-row', { hasText: 'Fix TM104' }).first().click();
    await cell.locator('.view-lines', { hasText: 'scaler.update()' }).waitFor();
    await cell.locator('.squiggly-warning').waitFor({ state: 'detached', timeout: 15_000 });
    await page.keyboard.press('Control+S');
    let saved = '';
    for (let i = 0; i < 100 && !saved.includes('scaler.update()'); i++) {
        await page.waitForTimeout(100);
        saved = readFileSync(join(WORKSPACE, NOTEBOOK), 'utf8');
    }
    const source = JSON.parse(saved).cells[2].source.join('');
    if (!source.includes('    scaler.step(optimizer)\n    scaler.update()\n')) {
        throw new Error(`the fixed cell on disk:\n${source}`);
    }
    await shot('28-notebook-cell-fixed');
});

step('Diagnose Cell Output on the failed cell names its rule in the panel and on the cell', async () => {
    const cell = cellEditor('batch @ batch.T');
    await cell.locator('.view-lines').click();
    await runCommand('TrainMedic: Diagnose Cell Output');
    const panel = await webviewWith('h1', 'CUDA out of memory');
    await panel.locator('.meta', { hasText: `the output of cell 5 of ${NOTEBOOK}` }).waitFor();
    await shot('29-cell-output-diagnosed');
    // The diagnostic sits on the cell's line that raised ("Cell In[4], line 2"); the panel may
    // have opened over the notebook.
    await page.locator('.tab', { hasText: NOTEBOOK }).first().click();
    await cell.locator('.squiggly-error').first().waitFor({ state: 'attached' });
    await shot('30-cell-output-on-the-cell');
    await runCommand('View: Single Column Editor Layout');
});

step('a rank-prefixed traceback frame in the terminal is a link that opens the file at its line', async () => {
    await runCommand('Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper.active .terminal-command-decoration').first().waitFor({ state: 'attached' });
    await page.keyboard.type(`printf '[rank3]:   File "%s/${SCRIPT}", line 7, in <module>\\n' "$PWD"`);
    await page.keyboard.press('Enter');
    const row = page.locator('.terminal-wrapper.active .xterm-rows > div', { hasText: /^\[rank3\]: {3}File "/ }).first();
    await row.waitFor();
    // Links are found under the mouse (xterm's layers above the text take the events, so the
    // mouse moves by coordinates); Ctrl+click opens one.
    const box = await row.boundingBox();
    if (!box) {
        throw new Error('the frame line is not on screen');
    }
    const at = { x: box.x + 20, y: box.y + box.height / 2 };
    await page.mouse.move(at.x, at.y);
    await page.waitForTimeout(800);
    await shot('31-terminal-rank-frame-link');
    await page.keyboard.down('Control');
    await page.mouse.click(at.x, at.y);
    await page.keyboard.up('Control');
    await page.locator('.tab.active', { hasText: SCRIPT }).waitFor();
    await page.locator('.statusbar-item', { hasText: 'Ln 7, Col 1' }).first().waitFor();
    await shot('32-terminal-link-opened');
    await runCommand('View: Hide Panel');
});

step('each language-model tool answers through vscode.lm.invokeTool', async () => {
    const calls = [
        ['trainmedic_diagnose {"paths": ["torchrun-amp.log"]}', 'Mixed precision loss scale'],
        ['trainmedic_diagnose {"text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."}', 'CUDA out of memory'],
        [`trainmedic_check {"paths": ["${NOTEBOOK}"]}`, 'TM110'],
        ['trainmedic_explain {"rule_id": "amp-loss-scale"}', 'Mixed precision loss scale'],
    ];
    for (const [call, expected] of calls) {
        // Not runCommand: the quick input stays open, reused for the command's own input box.
        const title = 'TrainMedic: Invoke Language Model Tool (test)';
        await (await quickInput('Control+Shift+P')).fill(`>${title}`);
        await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().click();
        const input = page.locator('.quick-input-widget input[placeholder^="trainmedic_explain"]');
        await input.waitFor({ state: 'visible' });
        await input.fill(call);
        await page.keyboard.press('Enter');
        const tool = call.split(' ')[0];
        const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
        await editor.locator('.view-lines', { hasText: `<!-- ${tool} -->` }).waitFor({ timeout: 60_000 });
        await editor.locator('.view-lines', { hasText: expected }).waitFor({ timeout: 10_000 }).catch(async () => {
            throw new Error(`${call}: the answer does not mention “${expected}”:\n${await editor.locator('.view-lines').innerText()}`);
        });
        await shot(`33-lm-tool-${tool}`);
        await runCommand('View: Revert and Close Editor'); // an untitled answer, closed unsaved
    }
});

step('New Rule from Selection writes a rule from a log line, and each save checks it', async () => {
    // Earlier steps may have closed it. Enter once the first match is the log: clicking a row
    // can land on a list still showing the recent files.
    await (await quickInput('Control+P')).fill(LOG);
    await page.locator('.quick-input-list .monaco-list-row.focused', { hasText: LOG }).waitFor();
    await page.keyboard.press('Enter');
    await page.locator('.tab.active', { hasText: LOG }).waitFor();
    const editor = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    await editor.locator('.view-lines').click();
    await goToLine(TRACEBACK.last);
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+End');
    await editor.locator('.selected-text').first().waitFor({ state: 'attached' });
    // Not runCommand: the quick input stays open for the command's questions.
    const title = 'TrainMedic: New Rule from Selection';
    await (await quickInput('Control+Shift+P')).fill(`>${title}`);
    await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().click();
    const id = page.locator('.quick-input-widget input[placeholder="nfs-stall"]');
    await id.waitFor({ state: 'visible' });
    await id.fill('min-loss-scale');
    await page.keyboard.press('Enter');
    await page.locator('.quick-input-widget', { hasText: 'Its category' }).waitFor({ state: 'visible' });
    await page.keyboard.press('Enter'); // the proposed category, "site"
    await page.locator('.tab.active', { hasText: 'min-loss-scale.yaml' }).waitFor();
    const file = join(WORKSPACE, 'trainmedic-rules', 'site', 'min-loss-scale.yaml');
    const written = readFileSync(file, 'utf8');
    if (!written.includes('  match:\n    - text: "[rank0]: FloatingPointError: Minimum loss scale reached (0.0001).') || !written.includes('  no_match:\n')) {
        throw new Error(`the new rule:\n${written}`);
    }
    await shot('34-new-rule-from-selection');
    // A weight above 1 breaks the rule: the save is checked and the line is marked.
    const rule = page.locator('.editor-group-container.active .editor-instance .monaco-editor').first();
    const weightLine = written.split('\n').indexOf('    weight: 0.9') + 1;
    await goToLine(weightLine);
    await page.keyboard.press('Home');
    await page.keyboard.press('Shift+End');
    await page.keyboard.type('weight: 2');
    await page.keyboard.press('Control+S');
    await rule.locator('.squiggly-error').first().waitFor({ state: 'attached' });
    await page.keyboard.press('Control+Shift+M');
    await page.getByPlaceholder(/^Filter \(e\.g\. text/).fill('min-loss-scale');
    await page.locator('.markers-panel .monaco-list-row', { hasText: 'weight: must be smaller than or equal to 1' }).first().waitFor({ state: 'visible' });
    await shot('35-rule-checked-on-save');
    await runCommand('View: Hide Panel');
});

let passed = 0;
let failed = 0;
for (const { name, run } of steps) {
    const started = Date.now();
    if (failed > 0) {
        console.log(`- ${name} (skipped: an earlier step failed)`);
        failed += 1;
        continue;
    }
    try {
        await run();
        passed += 1;
        console.log(`✔ ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    } catch (error) {
        failed += 1;
        console.log(`✘ ${name}: ${error instanceof Error ? error.message : String(error)}`);
        await shot(`failed-${passed + failed}`).catch(() => undefined);
    }
}
await context.close().catch(() => undefined);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
