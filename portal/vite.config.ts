import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The portal is served by the service at /portal/ (apps/api/src/portal.ts). `npm run dev` serves it
 * with hot reload on http://localhost:5173/portal/ and proxies the API, the login page and the
 * session cookie to the service (PORTAL_API, default http://localhost:8080); the service checks
 * that a cookie-authenticated call comes from its own origin, so the proxy presents the service's.
 */
const api = process.env.PORTAL_API ?? 'http://localhost:8080';
const proxied = { target: api, changeOrigin: true, headers: { origin: api } };

export default defineConfig({
  base: '/portal/',
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 1024 },
  server: {
    proxy: Object.fromEntries(['/admin', '/authentication', '/credential-management', '/configuration', '/pki'].map((prefix) => [prefix, proxied])),
  },
});
