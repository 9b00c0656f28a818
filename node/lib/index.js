"use strict";
// onnxruntime-node 1.30's exports, on idem: everything of onnxruntime-common (InferenceSession,
// Tensor, env, ...) plus listSupportedBackends, with idem registered as the 'cpu' backend.
// Written in the shape TypeScript emits (as onnxruntime-node's dist/index.js is), so that Node's
// cjs-module-lexer sees every name and `import { InferenceSession } from '...'` works from ESM.
var __createBinding = (this && this.__createBinding) || (Object.create ? (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    var desc = Object.getOwnPropertyDescriptor(m, k);
    if (!desc || ("get" in desc ? !m.__esModule : desc.writable || desc.configurable)) {
      desc = { enumerable: true, get: function() { return m[k]; } };
    }
    Object.defineProperty(o, k2, desc);
}) : (function(o, m, k, k2) {
    if (k2 === undefined) k2 = k;
    o[k2] = m[k];
}));
var __exportStar = (this && this.__exportStar) || function(m, exports) {
    for (var p in m) if (p !== "default" && !Object.prototype.hasOwnProperty.call(exports, p)) __createBinding(exports, m, p);
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.listSupportedBackends = void 0;
__exportStar(require("onnxruntime-common"), exports);
var backend_1 = require("./backend");
Object.defineProperty(exports, "listSupportedBackends", { enumerable: true, get: function () { return backend_1.listSupportedBackends; } });
const onnxruntime_common_1 = require("onnxruntime-common");
for (const backend of (0, backend_1.listSupportedBackends)()) {
    (0, onnxruntime_common_1.registerBackend)(backend.name, backend_1.idemBackend, 100);
}
// As onnxruntime-node: env.versions.node is the version of the API it implements (1.30.0);
// env.versions.idem is this package's.
if (!Object.prototype.hasOwnProperty.call(onnxruntime_common_1.env.versions, 'node')) {
    Object.defineProperty(onnxruntime_common_1.env.versions, 'node', { value: backend_1.apiVersion, enumerable: true });
}
if (!Object.prototype.hasOwnProperty.call(onnxruntime_common_1.env.versions, 'idem')) {
    Object.defineProperty(onnxruntime_common_1.env.versions, 'idem', { value: backend_1.version, enumerable: true });
}
