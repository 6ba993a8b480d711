import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as path from 'node:path';
import { DEFAULT_SETTINGS, RESTART_ON_CHANGE, expandPath, interpreterCommand, readSettings, serverLaunch, toServerSettings } from '../../src/common/settings';

const context = { workspaceFolder: '/ws', userHome: '/home/me' };

describe('settings', () => {
    it('reads defaults when nothing is set', () => {
        const problems: string[] = [];
        assert.deepEqual(
            readSettings(
                () => undefined,
                (p) => problems.push(p),
            ),
            DEFAULT_SETTINGS,
        );
        assert.deepEqual(problems, []);
    });

    it('reports an invalid value and keeps the default for it only', () => {
        const values: Record<string, unknown> = {
            collateralSeverity: 'loud',
            rulePacks: 'packs',
            diagnoseOnOpen: false,
            interpreter: '  /usr/bin/python3 ',
        };
        const problems: string[] = [];
        const settings = readSettings(
            (key) => values[key],
            (p) => problems.push(p),
        );
        assert.equal(settings.collateralSeverity, 'information');
        assert.deepEqual(settings.rulePacks, []);
        assert.equal(settings.diagnoseOnOpen, false);
        assert.equal(settings.interpreter, '/usr/bin/python3');
        assert.deepEqual(problems, [
            'trainmedic.rulePacks has an invalid value "packs"; using the default []',
            'trainmedic.collateralSeverity has an invalid value "loud"; using the default "information"',
        ]);
    });

    it('maps to the server section with camelCase keys and Workspace Trust', () => {
        const settings = { ...DEFAULT_SETTINGS, rulePacks: ['rules/site', '~/packs', '/abs/pack'], collateralSeverity: 'hint' as const };
        assert.deepEqual(toServerSettings(settings, false, context), {
            rulePacks: [path.join('/ws', 'rules/site'), '/home/me/packs', '/abs/pack'],
            logGlobs: ['**/*.log', '**/*.out', '**/*.err', '**/slurm-*.out'],
            diagnoseOnOpen: true,
            followLogs: true,
            collateralSeverity: 'hint',
            scriptChecks: true,
            workspaceTrusted: false,
        });
        assert.equal(toServerSettings(settings, true, context).workspaceTrusted, true);
    });

    it('sends neither the interpreter nor the client-only settings to the server', () => {
        const keys = Object.keys(toServerSettings(DEFAULT_SETTINGS, true, context)).sort();
        assert.deepEqual(keys, ['collateralSeverity', 'diagnoseOnOpen', 'followLogs', 'logGlobs', 'rulePacks', 'scriptChecks', 'workspaceTrusted']);
    });

    it('restarts the server for server settings and the interpreter only', () => {
        assert.ok(RESTART_ON_CHANGE.includes('trainmedic.interpreter'));
        assert.ok(RESTART_ON_CHANGE.includes('trainmedic.rulePacks'));
        assert.ok(!RESTART_ON_CHANGE.includes('trainmedic.notifyOnFailedCommand'));
        assert.ok(!RESTART_ON_CHANGE.includes('trainmedic.trace.server'));
    });

    it('expands paths and leaves a bare interpreter name to PATH', () => {
        assert.equal(expandPath('${workspaceFolder}/packs', context), '/ws/packs');
        assert.equal(expandPath('${userHome}/packs', context), '/home/me/packs');
        assert.equal(expandPath('packs', { workspaceFolder: undefined, userHome: '/home/me' }), 'packs');
        assert.equal(interpreterCommand('python3.11', context), 'python3.11');
        assert.equal(interpreterCommand('.venv/bin/python', context), path.join('/ws', '.venv/bin/python'));
        assert.equal(interpreterCommand('~/miniconda/bin/python', context), '/home/me/miniconda/bin/python');
    });
    it('starts the server on the bundled libraries or on the environment, with the bundled ones last', () => {
        assert.equal(DEFAULT_SETTINGS.importStrategy, 'useBundled');
        assert.ok(RESTART_ON_CHANGE.includes('trainmedic.importStrategy'));
        const bundled = serverLaunch('useBundled', '/ext/bundled/libs', '/mine', ':');
        assert.deepEqual(bundled, { args: ['-m', 'trainmedic', 'lsp'], pythonPath: '/ext/bundled/libs:/mine' });
        const environment = serverLaunch('fromEnvironment', '/ext/bundled/libs', undefined, ':');
        assert.equal(environment.pythonPath, '');
        assert.deepEqual(environment.args.slice(0, 1), ['-c']);
        assert.deepEqual(environment.args.slice(2), ['/ext/bundled/libs', 'lsp']);
        assert.match(environment.args[1] ?? '', /sys\.path\.append/);
        const problems: string[] = [];
        const read = readSettings((key) => (key === 'importStrategy' ? 'fromPath' : undefined), (p) => problems.push(p));
        assert.equal(read.importStrategy, 'useBundled');
        assert.equal(problems.length, 1);
    });
});
