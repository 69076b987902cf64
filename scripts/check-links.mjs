// Every relative link in README.md and docs/*.md names a file or folder of this repository (npm run lint).
// Links to other sites and to anchors within the same page are not checked.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const root = join(dirname(new URL(import.meta.url).pathname), '..');
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const broken = [];
for (const file of files) {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  for (const [, target] of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue;
    const path = decodeURIComponent(target.split('#')[0]);
    const resolved = join(root, dirname(file), path);
    if (!existsSync(resolved)) broken.push(`${file}: ${target} (${relative(root, resolved)} does not exist)`);
  }
}
if (broken.length) {
  console.error(`broken links:\n  ${broken.join('\n  ')}`);
  process.exit(1);
}
console.log(`links: ${files.length} files checked, every relative link resolves`);
