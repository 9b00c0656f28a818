'use strict';
// Loads the native addon (node/src/idem_node.cc). `npm install` builds it into
// build/Release/idem_node.node (scripts/build.js); IDEM_NODE_ADDON names another build of it
// (the test suite points it at the CMake build tree's copy).
const path = require('path');

const addonPath = process.env.IDEM_NODE_ADDON ||
    path.join(__dirname, '..', 'build', 'Release', 'idem_node.node');

let binding;
try {
  // eslint-disable-next-line import/no-dynamic-require
  binding = require(addonPath);
} catch (e) {
  const err = new Error(
      `idem: cannot load the native addon ${addonPath} (${e.message}); build it with ` +
      '`npm install` in the package folder (see docs/node.md)');
  err.cause = e;
  throw err;
}

module.exports = binding;
