/**
 * The extension's settings, typed, and how they map to what the server receives.
 * Pure: the caller passes a getter over `workspace.getConfiguration('trainmedic')`.
 */
import * as path from 'path';

import manifest from '../../package.json';

export const SECTION = 'trainmedic';

export const COLLATERAL_SEVERITIES = ['information', 'hint', 'warning'] as const;
export type CollateralSeverity = (typeof COLLATERAL_SEVERITIES)[number];

export const IMPORT_STRATEGIES = ['useBundled', 'fromEnvironment'] as const;
export type ImportStrategy = (typeof IMPORT_STRATEGIES)[number];

export interface Settings {
    readonly interpreter: string;
    readonly importStrategy: ImportStrategy;
    readonly rulePacks: readonly string[];
    readonly logGlobs: readonly string[];
    readonly diagnoseOnOpen: boolean;
    readonly followLogs: boolean;
    readonly collateralSeverity: CollateralSeverity;
    readonly scriptChecks: boolean;
    readonly notifyOnFailedCommand: boolean;
}

const CONTRIBUTED = manifest.contributes.configuration.properties as Record<string, { default?: unknown }>;

/** A setting's default as package.json contributes it: the one place the client keeps them. */
function contributedDefault<K extends keyof Settings>(key: K): Settings[K] {
    return CONTRIBUTED[`${SECTION}.${key}`]?.default as Settings[K];
}

/** The defaults of package.json; the server's settings dataclass is tested to equal them. */
export const DEFAULT_SETTINGS: Settings = {
    interpreter: contributedDefault('interpreter'),
    importStrategy: contributedDefault('importStrategy'),
    rulePacks: contributedDefault('rulePacks'),
    logGlobs: contributedDefault('logGlobs'),
    diagnoseOnOpen: contributedDefault('diagnoseOnOpen'),
    followLogs: contributedDefault('followLogs'),
    collateralSeverity: contributedDefault('collateralSeverity'),
    scriptChecks: contributedDefault('scriptChecks'),
    notifyOnFailedCommand: contributedDefault('notifyOnFailedCommand'),
};

/** The `trainmedic` section as the server reads it: camelCase on the wire. */
export interface ServerSettings {
    readonly rulePacks: string[];
    readonly logGlobs: string[];
    readonly diagnoseOnOpen: boolean;
    readonly followLogs: boolean;
    readonly collateralSeverity: CollateralSeverity;
    readonly scriptChecks: boolean;
    readonly workspaceTrusted: boolean;
}

/** Changing any of these restarts the server, so it starts with the new values. */
export const RESTART_ON_CHANGE: readonly string[] = [
    'interpreter',
    'importStrategy',
    'rulePacks',
    'logGlobs',
    'diagnoseOnOpen',
    'followLogs',
    'collateralSeverity',
    'scriptChecks',
].map((key) => `${SECTION}.${key}`);

export type ConfigGet = (key: string) => unknown;

function isStringArray(value: unknown): value is string[] {
    return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * Typed settings. A value of the wrong type is reported through `report` and its default used,
 * so a bad setting never stops the extension.
 */
export function readSettings(get: ConfigGet, report: (problem: string) => void): Settings {
    const pick = <T>(key: keyof Settings, valid: (v: unknown) => v is T, fallback: T): T => {
        const value = get(key);
        if (value === undefined || valid(value)) {
            return value ?? fallback;
        }
        report(`${SECTION}.${key} has an invalid value ${JSON.stringify(value)}; using the default ${JSON.stringify(fallback)}`);
        return fallback;
    };
    const isString = (v: unknown): v is string => typeof v === 'string';
    const isBoolean = (v: unknown): v is boolean => typeof v === 'boolean';
    const isSeverity = (v: unknown): v is CollateralSeverity => COLLATERAL_SEVERITIES.some((s) => s === v);
    const isStrategy = (v: unknown): v is ImportStrategy => IMPORT_STRATEGIES.some((s) => s === v);
    const d = DEFAULT_SETTINGS;
    return {
        interpreter: pick('interpreter', isString, d.interpreter).trim(),
        importStrategy: pick('importStrategy', isStrategy, d.importStrategy),
        rulePacks: pick('rulePacks', isStringArray, d.rulePacks),
        logGlobs: pick('logGlobs', isStringArray, d.logGlobs),
        diagnoseOnOpen: pick('diagnoseOnOpen', isBoolean, d.diagnoseOnOpen),
        followLogs: pick('followLogs', isBoolean, d.followLogs),
        collateralSeverity: pick('collateralSeverity', isSeverity, d.collateralSeverity),
        scriptChecks: pick('scriptChecks', isBoolean, d.scriptChecks),
        notifyOnFailedCommand: pick('notifyOnFailedCommand', isBoolean, d.notifyOnFailedCommand),
    };
}

export interface PathContext {
    /** The first workspace folder's path, when a folder is open. */
    readonly workspaceFolder: string | undefined;
    readonly userHome: string;
}

/** `~`, `${userHome}` and `${workspaceFolder}` expanded; a relative path taken from the workspace folder. */
export function expandPath(value: string, context: PathContext): string {
    let expanded = value
        .replace(/\$\{userHome\}/g, context.userHome)
        .replace(/^~(?=$|[\\/])/, context.userHome);
    if (context.workspaceFolder !== undefined) {
        expanded = expanded.replace(/\$\{workspaceFolder\}/g, context.workspaceFolder);
        if (!path.isAbsolute(expanded) && !expanded.includes('${')) {
            expanded = path.join(context.workspaceFolder, expanded);
        }
    }
    return expanded;
}

export function toServerSettings(settings: Settings, trusted: boolean, context: PathContext): ServerSettings {
    return {
        rulePacks: settings.rulePacks.map((p) => expandPath(p, context)),
        logGlobs: [...settings.logGlobs],
        diagnoseOnOpen: settings.diagnoseOnOpen,
        followLogs: settings.followLogs,
        collateralSeverity: settings.collateralSeverity,
        scriptChecks: settings.scriptChecks,
        workspaceTrusted: trusted,
    };
}

/** The interpreter setting as a command: a bare name (`python3.11`) stays a PATH lookup, a path is expanded. */
export function interpreterCommand(value: string, context: PathContext): string {
    return /[\\/]|^~|\$\{/.test(value) ? expandPath(value, context) : value;
}

/** How the server is started: its arguments after the interpreter and its PYTHONPATH. */
export interface ServerLaunch {
    readonly args: string[];
    readonly pythonPath: string;
}

/**
 * `useBundled` puts the bundled libraries first on PYTHONPATH. `fromEnvironment` leaves the
 * environment's own packages first and appends the bundled ones to the end of `sys.path`, after
 * site-packages (PYTHONPATH would go before it), so an installed `trainmedic[fast]` wins and a
 * plain environment still has every library the server needs.
 */
export function serverLaunch(strategy: ImportStrategy, libs: string, inherited: string | undefined, delimiter: string): ServerLaunch {
    if (strategy === 'useBundled') {
        return { args: ['-m', 'trainmedic', 'lsp'], pythonPath: [libs, inherited].filter(Boolean).join(delimiter) };
    }
    const start = "import runpy, sys; sys.path.append(sys.argv.pop(1)); runpy.run_module('trainmedic', run_name='__main__', alter_sys=True)";
    return { args: ['-c', start, libs, 'lsp'], pythonPath: inherited ?? '' };
}
