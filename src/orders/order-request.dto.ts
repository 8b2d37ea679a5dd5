import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Matches,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';

// Rules run from the one next to the property upwards; the pipe reports the first one broken.
const trimmed = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

export class OrderItemDto {
  @MaxLength(64) @IsNotEmpty() @IsString() sku!: string;
  @Max(10_000) @Min(1) @IsInt() quantity!: number;
}

/** The body of `POST /orders`. The packing delay and the approval rule come from the server's configuration. */
export class PlaceOrderDto {
  /** Placing the same orderId again returns the same workflow; absent: a new UUID. */
  @IsOptional()
  @Matches(/^[\w-]{1,64}$/, { message: 'orderId must be 1 to 64 of [A-Za-z0-9_-]' })
  orderId?: string;

  @ValidateNested({ each: true })
  @ArrayMaxSize(100)
  @ArrayMinSize(1)
  @IsArray()
  @Type(() => OrderItemDto)
  items!: OrderItemDto[];

  /** In cents. */
  @Max(Number.MAX_SAFE_INTEGER) @Min(1) @IsInt() amount!: number;

  @MaxLength(500) @IsNotEmpty() @IsString() @Transform(trimmed) address!: string;
}

/** The body of `POST /orders/:orderId/approve`; no approver: 'anonymous'. */
export class ApproveOrderDto {
  @MaxLength(200) @IsNotEmpty() @IsString() @IsOptional() by?: string;
}
