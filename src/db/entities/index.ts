import { Account } from './account';
import { Action } from './action';
import { ApiKey } from './api-key';
import { Card } from './card';
import { Pricing } from './pricing';
import { Project } from './project';
import { SparkHold } from './spark-hold';
import { SparkLedgerEntry } from './spark-ledger-entry';

export { Account, Action, ApiKey, Card, Pricing, Project, SparkHold, SparkLedgerEntry };
export const entities = [Account, Action, ApiKey, Card, Pricing, Project, SparkHold, SparkLedgerEntry];
