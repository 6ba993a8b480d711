/**
 * The language-model tools' inputs, checked and resolved without VS Code (so they are unit
 * tested): which server command answers, which files it reads, and which of those lie outside
 * the workspace (the tool asks before reading those).
 */
import * as path from 'path';

export const TOOL_NAMES = ['trainmedic_diagnose', 'trainmedic_check', 'trainmedic_explain'] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Where trainmedic_diagnose takes its text from when it is given neither text nor paths. */
export type TextSource = 'selection' | 'terminal';

/** A tool call as the server takes it; `source` text is read by the caller first. */
export type ServerCall =
    | { readonly kind: 'diagnoseText'; readonly text: string }
    | { readonly kind: 'diagnoseSource'; readonly source: TextSource }
    | { readonly kind: 'diagnosePaths'; readonly paths: readonly string[] }
    | { readonly kind: 'check'; readonly paths: readonly string[] }
    | { readonly kind: 'explain'; readonly ruleId: string };

/** A tool input the model must change; the message says how. */
export class ToolInputError extends Error {}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function only(tool: string, input: Json, allowed: readonly string[]): void {
    const unknown = Object.keys(input).filter((key) => !allowed.includes(key));
    if (unknown.length > 0) {
        throw new ToolInputError(`${tool}: unknown input ${unknown.map((k) => `"${k}"`).join(', ')}; it takes ${allowed.join(' or ')}`);
    }
}

function pathList(tool: string, value: unknown, roots: readonly string[]): string[] {
    if (!Array.isArray(value) || value.length === 0 || !value.every((p): p is string => typeof p === 'string' && p !== '')) {
        throw new ToolInputError(`${tool}: paths must be a non-empty list of file or folder paths`);
    }
    const base = roots[0];
    return value.map((p) => (path.isAbsolute(p) || base === undefined ? p : path.join(base, p)));
}

/** The server call for a tool's input; relative paths start at the first workspace folder. */
export function serverCall(tool: ToolName, input: unknown, roots: readonly string[]): ServerCall {
    if (!isObject(input)) {
        throw new ToolInputError(`${tool}: the input must be an object`);
    }
    switch (tool) {
        case 'trainmedic_diagnose': {
            only(tool, input, ['text', 'paths', 'source']);
            const given = ['text', 'paths', 'source'].filter((key) => input[key] !== undefined);
            if (given.length !== 1) {
                throw new ToolInputError(`${tool} takes exactly one of text (the log text itself), paths (log files or folders) or source ("selection" or "terminal")`);
            }
            if (input.text !== undefined) {
                if (typeof input.text !== 'string' || input.text.trim() === '') {
                    throw new ToolInputError(`${tool}: text must be the log text itself`);
                }
                return { kind: 'diagnoseText', text: input.text };
            }
            if (input.source !== undefined) {
                if (input.source !== 'selection' && input.source !== 'terminal') {
                    throw new ToolInputError(`${tool}: source must be "selection" or "terminal"`);
                }
                return { kind: 'diagnoseSource', source: input.source };
            }
            return { kind: 'diagnosePaths', paths: pathList(tool, input.paths, roots) };
        }
        case 'trainmedic_check':
            only(tool, input, ['paths']);
            return { kind: 'check', paths: pathList(tool, input.paths, roots) };
        case 'trainmedic_explain':
            only(tool, input, ['rule_id']);
            if (typeof input.rule_id !== 'string' || input.rule_id.trim() === '') {
                throw new ToolInputError(`${tool}: rule_id must be a rule id such as "amp-loss-scale"`);
            }
            return { kind: 'explain', ruleId: input.rule_id.trim() };
    }
}

function inside(file: string, root: string): boolean {
    const relative = path.relative(root, file);
    return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** The paths of `call` that no workspace folder holds. */
export function outsideWorkspace(call: ServerCall, roots: readonly string[]): string[] {
    if (call.kind !== 'diagnosePaths' && call.kind !== 'check') {
        return [];
    }
    return call.paths.filter((p) => !roots.some((root) => inside(path.resolve(p), path.resolve(root))));
}

/** "trainmedic_diagnose {"paths": [...]}": a tool name and its JSON input, as the test command reads them. */
export function parseInvocation(line: string): { tool: ToolName; input: unknown } {
    const match = /^\s*(\S+)\s*([\s\S]*)$/.exec(line);
    const tool = TOOL_NAMES.find((name) => name === match?.[1]);
    if (!match || !tool) {
        throw new ToolInputError(`start with a tool name: ${TOOL_NAMES.join(', ')}`);
    }
    try {
        return { tool, input: JSON.parse(match[2]?.trim() ? match[2] : '{}') as unknown };
    } catch (error) {
        throw new ToolInputError(`the input is not JSON: ${String(error)}`);
    }
}
