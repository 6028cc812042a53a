/**
 * The dashboard's build: Preact and TypeScript into hashed files under `dist/web/` (served by the API process under
 * `/dashboard/`, the hashed ones with a year's cache), nothing from a CDN.
 */
import preact from '@preact/preset-vite';
import { defineConfig } from 'vite';

export default defineConfig({
  base: '/dashboard/',
  plugins: [preact()],
  build: {
    outDir: '../dist/web',
    emptyOutDir: true,
    assetsDir: 'assets',
    target: 'es2022',
    sourcemap: false,
  },
});
