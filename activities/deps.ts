import type { DataSource } from 'typeorm';
import type { ImageProvider } from '../src/providers/provider';
import type { AssetStore } from '../src/storage/asset-store';

/** What activities are built from (the dependency-injection pattern of the Temporal samples). */
export interface ActivityDeps {
  db: DataSource;
  store: AssetStore;
  provider: ImageProvider;
}
