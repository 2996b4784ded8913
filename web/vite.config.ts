// Builds the web UI into the Python package, which serves it at `/`.
import { defineConfig } from "vite";

export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "../src/partwire/server/static",
    emptyOutDir: true,
    assetsDir: "assets",
    chunkSizeWarningLimit: 1024,
  },
  server: { proxy: { "^/(session|event|provider|agent|find|path|permission|question|config)": "http://127.0.0.1:4096" } },
});
