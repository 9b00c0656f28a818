'use strict';
// `npm install`'s build step: compiles the addon with idem's own CMake build, from the repository
// this package lives in (node/ of an idem checkout), then puts it at build/Release/idem_node.node.
// Offline: CMake, the compiler and idem's libraries come from Debian (scripts/setup.sh), and the
// two header packages (node-api-headers, node-addon-api) from the npm registry; nothing is
// downloaded from Node.js's own site (node-gyp would fetch its headers from there).
//
// Environment:
//   IDEM_CMAKE_BUILD_DIR  an existing or new CMake build folder of the repository to build the
//                         `idem_node` target in (default: build/cmake in this package). Reusing a
//                         configured tree (e.g. the repository's build/) compiles only the addon.
//   IDEM_CMAKE_ARGS       extra arguments for the configure step.
//   CMAKE_BUILD_PARALLEL_LEVEL  build jobs (CMake's own variable).
const childProcess = require('child_process');
const fs = require('fs');
const path = require('path');

const pkg = path.resolve(__dirname, '..');
const root = path.resolve(pkg, '..');

function run(cmd, args) {
  console.log(`idem-node: ${cmd} ${args.join(' ')}`);
  const r = childProcess.spawnSync(cmd, args, {stdio: 'inherit'});
  if (r.error) throw new Error(`idem-node: cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`idem-node: ${cmd} failed (exit ${r.status})`);
}

function have(cmd) {
  return childProcess.spawnSync(cmd, ['--version'], {stdio: 'ignore'}).status === 0;
}

function headerDir(file) {
  return path.dirname(require.resolve(file, {paths: [pkg]}));
}

function main() {
  if (!fs.existsSync(path.join(root, 'CMakeLists.txt')) ||
      !fs.existsSync(path.join(root, 'include', 'idem', 'session.h'))) {
    throw new Error(`idem-node: ${root} is not an idem checkout; this package builds from the ` +
                    'repository it sits in (node/ of idem)');
  }
  const buildDir = path.resolve(process.env.IDEM_CMAKE_BUILD_DIR || path.join(pkg, 'build', 'cmake'));
  const napiDir = headerDir('node-api-headers/include/node_api.h');
  const addonApiDir = headerDir('node-addon-api/napi.h');
  const cache = path.join(buildDir, 'CMakeCache.txt');
  const cacheText = fs.existsSync(cache) ? fs.readFileSync(cache, 'utf8') : null;
  const nodeOptions = ['-DIDEM_BUILD_NODE=ON', `-DIDEM_NODE_API_INCLUDE_DIR=${napiDir}`,
                       `-DIDEM_NODE_ADDON_API_DIR=${addonApiDir}`];
  const extra = (process.env.IDEM_CMAKE_ARGS || '').split(/\s+/).filter(Boolean);
  if (cacheText === null) {
    const configure = ['-S', root, '-B', buildDir, '-DCMAKE_BUILD_TYPE=Release',
                       '-DIDEM_BUILD_TESTS=OFF', '-DIDEM_BUILD_BENCH=OFF', '-DIDEM_BUILD_PYTHON=OFF',
                       ...nodeOptions];
    if (have('ninja')) configure.push('-G', 'Ninja');
    run('cmake', [...configure, ...extra]);
  } else if (!/^IDEM_NODE_ADDON_ENABLED:INTERNAL=ON$/m.test(cacheText)) {
    // A tree configured without the addon (e.g. before node_modules existed): turn it on.
    run('cmake', ['-S', root, '-B', buildDir, ...nodeOptions, ...extra]);
  }
  run('cmake', ['--build', buildDir, '--target', 'idem_node']);
  const built = path.join(buildDir, 'node', 'idem_node.node');
  const target = path.join(pkg, 'build', 'Release', 'idem_node.node');
  fs.mkdirSync(path.dirname(target), {recursive: true});
  // Copy to a temporary name, then rename: a process that has the old addon loaded keeps it.
  fs.copyFileSync(built, `${target}.tmp`);
  fs.renameSync(`${target}.tmp`, target);
  console.log(`idem-node: built ${target}`);
}

try {
  main();
} catch (e) {
  console.error(e.message);
  process.exit(1);
}
