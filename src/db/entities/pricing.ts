import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** The one price list (row id 1); operators change it with `pricing:set`. */
@Entity('pricing')
export class Pricing {
  @PrimaryColumn({ type: 'integer' })
  id: number;

  @Column({ type: 'integer' })
  generation: number;

  @Column({ type: 'integer' })
  improvement: number;

  @Column({ name: 'video_5sec', type: 'integer' })
  video5sec: number;

  @Column({ name: 'video_10sec', type: 'integer' })
  video10sec: number;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
