// The project's folder (the one with package.json), for files read at run time (migrations/, the checkout page's
// sources): found upwards from this file, whether it runs from src/ or bundled into .build/ by `npm start`.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

function findProjectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('cannot find the project folder (with package.json) above ' + import.meta.url);
    dir = parent;
  }
  return dir;
}

export const PROJECT_ROOT = findProjectRoot();
