// Type-aware linting of the extension, its webview script and the tests; zero warnings allowed.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
    { ignores: ['dist/**', 'out/**', 'bundled/**', 'node_modules/**', 'test/fixtures/**', '*.vsix'] },
    js.configs.recommended,
    {
        files: ['**/*.ts'],
        extends: [...tseslint.configs.strictTypeChecked, ...tseslint.configs.stylisticTypeChecked],
        languageOptions: {
            parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
        },
        rules: {
            // Template literals of numbers are how the messages are written.
            '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
            eqeqeq: 'error',
            curly: 'error',
        },
    },
    {
        // node:test's describe/it return promises that the runner itself awaits.
        files: ['test/unit/**/*.ts'],
        rules: {
            '@typescript-eslint/no-floating-promises': [
                'error',
                { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['describe', 'it'] }] },
            ],
        },
    },
    {
        files: ['**/*.mjs', 'test/e2e/**/*.js'],
        languageOptions: {
            globals: { process: 'readonly', console: 'readonly', URL: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly' },
        },
    },
);
