import { InitialSchema1732300000000 } from './1732300000000-InitialSchema';
import { IdempotencyKeys1732300000001 } from './1732300000001-IdempotencyKeys';
import { Uploads1732300000002 } from './1732300000002-Uploads';
import { Webhooks1732300000003 } from './1732300000003-Webhooks';
import { Jobs1732300000004 } from './1732300000004-Jobs';
import { StartStates1732300000005 } from './1732300000005-StartStates';
import { ActionParamsIndex1732300000006 } from './1732300000006-ActionParamsIndex';
import { ProviderRouting1732300000007 } from './1732300000007-ProviderRouting';
import { HelperUsage1732300000009 } from './1732300000009-HelperUsage';
import { Funnels1732300000010 } from './1732300000010-Funnels';
import { HoldsReservedAtCommit1732300000011 } from './1732300000011-HoldsReservedAtCommit';
import { RetentionIndexes1732300000012 } from './1732300000012-RetentionIndexes';
import { CompletedActionsIndex1732300000013 } from './1732300000013-CompletedActionsIndex';
import { ReconcilerIndexes1732300000014 } from './1732300000014-ReconcilerIndexes';
import { ActionEvents1732300000015 } from './1732300000015-ActionEvents';
import { OpenHoldsIndex1732300000016 } from './1732300000016-OpenHoldsIndex';
import { ReconcilerProgress1732300000017 } from './1732300000017-ReconcilerProgress';
import { CreationOrderIndexes1732300000018 } from './1732300000018-CreationOrderIndexes';
import { DashboardUsers1732300000019 } from './1732300000019-DashboardUsers';
import { LedgerIndexes1732300000020 } from './1732300000020-LedgerIndexes';
import { ActionThumbnails1732300000021 } from './1732300000021-ActionThumbnails';
import { KeySpendLimits1732300000022 } from './1732300000022-KeySpendLimits';
import { AccountEvents1732300000023 } from './1732300000023-AccountEvents';
import { SandboxAccounts1732300000024 } from './1732300000024-SandboxAccounts';
import { FeedRowsFromEvents1732300000025 } from './1732300000025-FeedRowsFromEvents';
import { Batches1732300000026 } from './1732300000026-Batches';
import { InteractiveDemand1732300000027 } from './1732300000027-InteractiveDemand';

/** Every migration, in the order it runs. Add new ones at the end; never edit a released one. */
export const migrations = [
  InitialSchema1732300000000, IdempotencyKeys1732300000001, Uploads1732300000002, Webhooks1732300000003, Jobs1732300000004,
  StartStates1732300000005,
  ActionParamsIndex1732300000006,
  ProviderRouting1732300000007,
  HelperUsage1732300000009,
  Funnels1732300000010,
  HoldsReservedAtCommit1732300000011,
  RetentionIndexes1732300000012,
  CompletedActionsIndex1732300000013,
  ReconcilerIndexes1732300000014,
  ActionEvents1732300000015,
  OpenHoldsIndex1732300000016,
  ReconcilerProgress1732300000017,
  CreationOrderIndexes1732300000018,
  DashboardUsers1732300000019,
  LedgerIndexes1732300000020,
  ActionThumbnails1732300000021,
  KeySpendLimits1732300000022,
  AccountEvents1732300000023,
  SandboxAccounts1732300000024,
  FeedRowsFromEvents1732300000025,
  Batches1732300000026,
  InteractiveDemand1732300000027,
];
