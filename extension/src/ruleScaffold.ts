/**
 * A new rule's YAML from a selected log excerpt, without VS Code (so it is unit tested). Every
 * required field is there, so the file loads at once: the excerpt is the first
 * `examples.match` and, with its numbers generalised, the first fingerprint; every other text
 * is a REPLACE placeholder the author fills in, with a `no_match` look-alike to write.
 */

export const RULE_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const MAX_PATTERN_SOURCE = 200;

/** The first line with text of the excerpt as a linear-time pattern: literal, numbers generalised. */
export function patternFrom(excerpt: string): string {
    const line = excerpt.split(/\r?\n/).find((l) => l.trim() !== '') ?? excerpt;
    // Launcher prefixes ([rank3]:, 3:) and timestamps vary per line: start after them.
    const body = line.replace(/^\s*(?:\[(?:rank|default)?\d+\]:|\d+:)?\s*/, '').slice(0, MAX_PATTERN_SOURCE).trim();
    return body
        .split(/(\d+)/)
        .map((part, i) => (i % 2 === 1 ? `\\d{1,${Math.max(part.length + 3, 9)}}` : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('');
}

const q = (text: string): string => JSON.stringify(text); // a JSON string is a YAML double-quoted scalar

export function ruleScaffold(id: string, category: string, excerpt: string, source: string): string {
    const symptom = excerpt.split(/\r?\n/).find((l) => l.trim() !== '')?.trim() ?? excerpt.trim();
    return [
        `id: ${id}`,
        `title: ${q('REPLACE: what failed, in a few words')}`,
        `category: ${category}`,
        'role: root',
        `summary: ${q('REPLACE: what this failure is, why it happens and what it breaks.')}`,
        'affected_systems:',
        `  - ${q('REPLACE: the framework, launcher or hardware, with versions')}`,
        'symptoms:',
        `  - ${q(symptom)}`,
        'causes:',
        `  - ${q('REPLACE: a cause')}`,
        `fix: ${q('REPLACE: what to change, as steps to follow.')}`,
        'prevention:',
        `  - ${q('REPLACE: how to keep it from happening again')}`,
        'verify:',
        `  command: ${q('trainmedic diagnose LOG')}`,
        `  explains: ${q('REPLACE: what the command shows once the fix is in.')}`,
        'fingerprints:',
        '  - name: first-line',
        `    pattern: ${q(patternFrom(excerpt))}`,
        '    weight: 0.9',
        'monitor: first-line',
        'examples:',
        '  match:',
        `    - text: ${q(excerpt.replace(/\r\n/g, '\n'))}`,
        `      source: ${q(source)}`,
        '  no_match:',
        `    - text: ${q('REPLACE: a line that looks alike but is not this failure')}`,
        `      source: ${q('REPLACE: where the look-alike comes from')}`,
        '',
    ].join('\n');
}

/** The 0-based line of a problem the server reports ("examples: ..." has none: the examples key). */
export function problemLine(text: string, line: number | null, message: string): number {
    if (line !== null && line > 0) {
        return line - 1;
    }
    const key = /^(\w+)/.exec(message)?.[1];
    const at = key ? text.split(/\r?\n/).findIndex((l) => l.startsWith(`${key}:`)) : -1;
    return Math.max(at, 0);
}
