import { Global, Module } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DemoDatabase } from './demo-database.js';

/** The app's DataSource, injectable as `DataSource` (what @nestjs/typeorm would provide). */
@Global()
@Module({
  providers: [DemoDatabase, { provide: DataSource, inject: [DemoDatabase], useFactory: (db: DemoDatabase) => db.open() }],
  exports: [DataSource],
})
export class DemoDatabaseModule {}
