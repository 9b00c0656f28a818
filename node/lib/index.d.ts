// onnxruntime-node 1.30's typings: onnxruntime-common's API plus listSupportedBackends.
export * from 'onnxruntime-common';
export declare const listSupportedBackends: () => {name: string; bundled: boolean}[];
