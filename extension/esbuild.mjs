// Bundles the extension (Node, CommonJS, `vscode` external) and the results panel's script and
// styles (browser, with uPlot) into dist/. `--production` minifies and drops source maps.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');

const common = {
    bundle: true,
    minify: production,
    sourcemap: production ? false : 'linked',
    logLevel: 'warning',
    legalComments: 'linked',
};

await Promise.all([
    esbuild.build({
        ...common,
        entryPoints: ['src/extension.ts'],
        outfile: 'dist/extension.js',
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        external: ['vscode'],
    }),
    esbuild.build({
        ...common,
        entryPoints: { main: 'src/webview/main.ts' },
        outdir: 'dist/webview',
        platform: 'browser',
        format: 'iife',
        target: 'es2022',
    }),
]);
