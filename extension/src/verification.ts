/**
 * The line typed into a terminal for a rule's verification command. A `trainmedic ...` command
 * runs through the server's own Python and the libraries bundled with the extension, so it works
 * where the `trainmedic` CLI was never installed. Pure.
 */

const SAFE_POSIX = /^[\w@%+=:,./-]+$/;

export function quoteForShell(word: string, platform: NodeJS.Platform): string {
    if (platform === 'win32') {
        return /[\s"'`$&;]/.test(word) ? `"${word.replace(/"/g, '`"')}"` : word;
    }
    return SAFE_POSIX.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** `command` as typed into the terminal: `trainmedic X` becomes `<python> -m trainmedic X`. */
export function verificationCommandLine(command: string, python: string | undefined, platform: NodeJS.Platform): string {
    const match = /^trainmedic(\s.*)?$/s.exec(command.trim());
    if (!match || python === undefined) {
        return command.trim();
    }
    const invoke = platform === 'win32' ? `& ${quoteForShell(python, platform)}` : quoteForShell(python, platform);
    return `${invoke} -m trainmedic${match[1] ?? ''}`;
}
