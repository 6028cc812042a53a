/** The asset store the configuration chooses (`ASSET_STORE`): the composition root's one line for storage. */
import type { Config } from '../config';
import { type AssetStore, FileAssetStore } from './asset-store';
import { S3AssetStore } from './s3/s3-asset-store';

export type AssetStoreConfig = Pick<Config, 'assetStore' | 'assetsDir' | 's3Bucket' | 's3Endpoint' | 's3Region' | 's3ForcePathStyle'
  | 's3AccessKeyId' | 's3SecretAccessKey' | 's3Prefix'>;

export function createAssetStore(config: AssetStoreConfig): AssetStore {
  if (config.assetStore === 'file') return new FileAssetStore(config.assetsDir);
  if (!config.s3Bucket) throw new Error('ASSET_STORE=s3 needs S3_BUCKET');
  return new S3AssetStore({
    bucket: config.s3Bucket,
    endpoint: config.s3Endpoint,
    region: config.s3Region,
    forcePathStyle: config.s3ForcePathStyle,
    credentials: config.s3AccessKeyId && config.s3SecretAccessKey
      ? { accessKeyId: config.s3AccessKeyId, secretAccessKey: config.s3SecretAccessKey } : undefined,
    prefix: config.s3Prefix,
  });
}
